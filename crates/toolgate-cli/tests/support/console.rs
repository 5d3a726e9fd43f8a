//! The web console of `toolgate serve --http --console` as a browser meets it: the
//! one-time login link, pages under the session cookie, and forms posted from
//! the console's own origin under its CSRF token.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::await_line;

/// A running `toolgate` with a console, killed when dropped.
pub struct Served {
    pub child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    pub login: String,
    pub dir: tempfile::TempDir,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `toolgate ARGS` in `dir`, once it printed its login link (or, with `auth:`,
/// where to log in).
pub fn start(dir: tempfile::TempDir, args: &[&str]) -> Served {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(args)
        .current_dir(dir.path())
        .env_remove("TOOLGATE_STATE_DIR")
        .env_remove("TOOLGATE_STORE")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (login, _) = await_line(&mut child, |line| {
        if let Some(url) = line
            .split_whitespace()
            .find(|w| w.contains("/login?token="))
        {
            return Some(url.to_owned());
        }
        // With `auth:` there is no link, only the address to log in at.
        if line.contains("console at http://") {
            let at = line.split_whitespace().find(|w| w.starts_with("http://"));
            return at.map(|a| a.trim_end_matches('/').to_owned());
        }
        None
    });
    let base = login.split("/login").next().unwrap().to_owned();
    Served {
        child,
        base,
        login,
        dir,
    }
}

/// A browser that does not follow redirects, so a test sees them.
pub fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Opens the login link; the session cookie it sets (HttpOnly, SameSite=Strict).
pub async fn log_in(served: &Served) -> String {
    let response = browser().get(&served.login).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 303);
    let cookie = response
        .headers()
        .get("set-cookie")
        .expect("a session cookie")
        .to_str()
        .unwrap()
        .to_owned();
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("SameSite=Strict"), "{cookie}");
    cookie.split(';').next().unwrap().to_owned()
}

/// GETs `path` under `cookie`: the status and the page.
pub async fn get(served: &Served, path: &str, cookie: &str) -> (u16, String) {
    let response = browser()
        .get(format!("{}{path}", served.base))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// Posts `form` as the console's own page does (same origin).
pub async fn post(served: &Served, path: &str, cookie: &str, form: &[(&str, &str)]) -> u16 {
    browser()
        .post(format!("{}{path}", served.base))
        .header("cookie", cookie)
        .header("origin", &served.base)
        .header("sec-fetch-site", "same-origin")
        .form(form)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// The value of `name="csrf-token" content="..."` in a page.
pub fn csrf(page: &str) -> String {
    let at = page
        .find(r#"name="csrf-token" content=""#)
        .expect("a CSRF token");
    let rest = &page[at + r#"name="csrf-token" content=""#.len()..];
    rest[..rest.find('"').unwrap()].to_owned()
}

/// Waits until the Approvals page shows a waiting request; its id.
pub async fn waiting_approval(served: &Served, cookie: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, page) = get(served, "/approvals/rows", cookie).await;
        if let Some(at) = page.find(r#"id="ap-"#) {
            let rest = &page[at + 4..];
            return rest[..rest.find('"').unwrap()].to_owned();
        }
        assert!(Instant::now() < deadline, "no approval appeared: {page}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
