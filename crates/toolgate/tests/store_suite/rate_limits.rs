//! Rate buckets shared by every handle on a store, and swept once expired.

use super::*;

fn bucket(key: &str, calls: u32) -> RateBucket {
    let interval = Duration::from_secs(3600) / calls;
    RateBucket {
        key: key.into(),
        interval,
        tolerance: interval * (calls - 1),
    }
}

pub(super) fn a_shared_rate_bucket_admits_exactly_its_limit_across_handles(backend: &dyn Backend) {
    let handles: Vec<Arc<dyn Store>> = (0..3).map(|_| backend.open().unwrap()).collect();
    if !backend.shares_rate_limits() {
        // Each gate on this store counts in its own process.
        assert!(handles[0].rate_counters().is_none());
        return;
    }
    // 20 calls an hour, raced for by 12 threads on three handles.
    let admitted = Arc::new(AtomicUsize::new(0));
    let callers: Vec<_> = (0..12)
        .map(|i| {
            let store = handles[i % 3].clone();
            let admitted = admitted.clone();
            std::thread::spawn(move || {
                let counters = store.rate_counters().unwrap();
                for _ in 0..10 {
                    match counters.take_rate(&[bucket("hourly", 20)]).unwrap() {
                        RateTaken::Admitted => {
                            admitted.fetch_add(1, Ordering::SeqCst);
                        }
                        RateTaken::Refused { bucket, wait } => {
                            assert_eq!(bucket, 0);
                            assert!(wait > Duration::from_secs(170), "{wait:?}");
                        }
                    }
                }
            })
        })
        .collect();
    for caller in callers {
        caller.join().unwrap();
    }
    assert_eq!(admitted.load(Ordering::SeqCst), 20);
    // A call under two buckets, one of them full: refused, and the other keeps
    // the call it had room for.
    let counters = handles[1].rate_counters().unwrap();
    let (a, full) = (bucket("a", 1), bucket("hourly", 20));
    assert!(matches!(
        counters.take_rate(&[full, a.clone()]).unwrap(),
        RateTaken::Refused { bucket: 0, .. }
    ));
    assert_eq!(
        counters.take_rate(std::slice::from_ref(&a)).unwrap(),
        RateTaken::Admitted
    );
    assert!(matches!(
        handles[2].rate_counters().unwrap().take_rate(&[a]).unwrap(),
        RateTaken::Refused { bucket: 0, .. }
    ));
}

pub(super) fn expired_rate_buckets_are_swept_and_live_ones_stay_counted(backend: &dyn Backend) {
    let store = backend.open().unwrap();
    let Some(counters) = store.rate_counters() else {
        // Counted in the process: nothing kept to sweep.
        return;
    };
    let brief = |key: &str| RateBucket {
        key: key.into(),
        interval: Duration::from_millis(20),
        tolerance: Duration::ZERO,
    };
    // 30 buckets full again 20 ms from now, and 5 that stay a call ahead for an hour.
    for i in 0..30 {
        let taken = counters
            .take_rate(&[brief(&format!("brief-{i:02}"))])
            .unwrap();
        assert_eq!(taken, RateTaken::Admitted);
    }
    for i in 0..5 {
        let taken = counters
            .take_rate(&[bucket(&format!("hourly-{i}"), 1)])
            .unwrap();
        assert_eq!(taken, RateTaken::Admitted);
    }
    std::thread::sleep(Duration::from_millis(60));
    // Calls enough that a sweep comes round (one call in 64 sweeps).
    let steady = RateBucket {
        key: "steady".into(),
        interval: Duration::from_micros(1),
        tolerance: Duration::from_secs(1),
    };
    for _ in 0..64 {
        let taken = counters.take_rate(std::slice::from_ref(&steady)).unwrap();
        assert_eq!(taken, RateTaken::Admitted);
    }
    let kept = backend.rate_bucket_keys();
    assert!(
        kept.iter().all(|key| !key.starts_with("brief-")),
        "expired buckets left: {kept:?}"
    );
    for i in 0..5 {
        assert!(kept.contains(&format!("hourly-{i}")), "{kept:?}");
    }
    // Admission is as before: the live buckets still refuse, and a swept one
    // admits as a fresh bucket would, then refuses at its limit.
    for i in 0..5 {
        match counters
            .take_rate(&[bucket(&format!("hourly-{i}"), 1)])
            .unwrap()
        {
            RateTaken::Refused { bucket: 0, wait } => {
                assert!(wait > Duration::from_secs(3500), "{wait:?}")
            }
            other => panic!("hourly-{i}: {other:?}"),
        }
    }
    let swept = bucket("brief-00", 1);
    assert_eq!(
        counters.take_rate(std::slice::from_ref(&swept)).unwrap(),
        RateTaken::Admitted
    );
    assert!(matches!(
        counters.take_rate(&[swept]).unwrap(),
        RateTaken::Refused { bucket: 0, .. }
    ));
}
