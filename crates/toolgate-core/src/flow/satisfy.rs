//! Whether a guard can ever hold: tried against every consistent assignment of its
//! atoms (a state key is true, set, equal to a value; a tool has succeeded; a step
//! is done). Used by `check` to find steps that can never become active and
//! constraints that contradict each other.

use serde_json::Value;

use super::guard::values_equal;
use super::model::Guard;

/// The largest number of distinct atoms tried exhaustively; larger guards are
/// assumed satisfiable rather than checked slowly.
const MAX_ATOMS: usize = 10;

/// One fact a guard reads.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Atom {
    IsTrue(String),
    IsSet(String),
    Eq(String, Value),
    CalledOk(String),
    Done(String),
    /// An `above`, by its written form: independent of everything else.
    Above(String),
}

/// Whether `guard` holds for some consistent facts that agree with `fixed`.
pub(crate) fn satisfiable(guard: &Guard, fixed: &[(Atom, bool)]) -> bool {
    let mut atoms: Vec<Atom> = Vec::new();
    collect(guard, &mut atoms);
    for (atom, _) in fixed {
        push(&mut atoms, atom.clone());
    }
    if atoms.len() > MAX_ATOMS {
        return true;
    }
    (0u32..1 << atoms.len()).any(|mask| {
        let value = |i: usize| mask & (1 << i) != 0;
        let assignment: Vec<(&Atom, bool)> = atoms
            .iter()
            .enumerate()
            .map(|(i, a)| (a, value(i)))
            .collect();
        fixed
            .iter()
            .all(|(atom, want)| lookup(&assignment, atom) == Some(*want))
            && consistent(&assignment)
            && holds(guard, &assignment)
    })
}

/// The tools a guard needs to have succeeded, whatever else holds: its
/// `called_ok` atoms reached only through `all`.
pub(crate) fn necessary_successes(guard: &Guard, out: &mut Vec<String>) {
    match guard {
        Guard::CalledOk(tool) => out.push(tool.clone()),
        Guard::All(parts) => parts.iter().for_each(|p| necessary_successes(p, out)),
        _ => {}
    }
}

fn push(atoms: &mut Vec<Atom>, atom: Atom) {
    if !atoms.contains(&atom) {
        atoms.push(atom);
    }
}

fn collect(guard: &Guard, atoms: &mut Vec<Atom>) {
    guard.for_each_leaf(&mut |leaf| match leaf {
        Guard::Always => {}
        Guard::IsTrue(k) => push(atoms, Atom::IsTrue(k.clone())),
        Guard::IsSet(k) => push(atoms, Atom::IsSet(k.clone())),
        Guard::Eq(pairs) => {
            for (k, v) in pairs {
                push(atoms, Atom::Eq(k.clone(), v.clone()));
            }
        }
        Guard::CalledOk(t) => push(atoms, Atom::CalledOk(t.clone())),
        Guard::Done(s) => push(atoms, Atom::Done(s.clone())),
        Guard::Above(_)
        | Guard::StartsWith(_)
        | Guard::Claim(_)
        | Guard::Seen(_)
        | Guard::Tainted(_) => push(atoms, Atom::Above(leaf.to_string())),
        // Never leaves: the walk goes through them.
        Guard::All(_) | Guard::Any(_) | Guard::Not(_) => {}
    });
}

fn lookup(assignment: &[(&Atom, bool)], atom: &Atom) -> Option<bool> {
    assignment
        .iter()
        .find(|(a, _)| same(a, atom))
        .map(|(_, v)| *v)
}

/// Atom equality with values compared as the monitor compares them.
fn same(a: &Atom, b: &Atom) -> bool {
    match (a, b) {
        (Atom::Eq(k1, v1), Atom::Eq(k2, v2)) => k1 == k2 && values_equal(v1, v2),
        _ => a == b,
    }
}

fn holds(guard: &Guard, assignment: &[(&Atom, bool)]) -> bool {
    let atom = |a: Atom| lookup(assignment, &a).unwrap_or(false);
    match guard {
        Guard::Always => true,
        Guard::IsTrue(k) => atom(Atom::IsTrue(k.clone())),
        Guard::IsSet(k) => atom(Atom::IsSet(k.clone())),
        Guard::Eq(pairs) => pairs
            .iter()
            .all(|(k, v)| atom(Atom::Eq(k.clone(), v.clone()))),
        Guard::CalledOk(t) => atom(Atom::CalledOk(t.clone())),
        Guard::Done(s) => atom(Atom::Done(s.clone())),
        Guard::All(parts) => parts.iter().all(|p| holds(p, assignment)),
        Guard::Any(parts) => parts.iter().any(|p| holds(p, assignment)),
        Guard::Not(inner) => !holds(inner, assignment),
        Guard::Above(_)
        | Guard::StartsWith(_)
        | Guard::Claim(_)
        | Guard::Seen(_)
        | Guard::Tainted(_) => atom(Atom::Above(guard.to_string())),
    }
}

/// Whether the state facts of an assignment could all be true of one state.
fn consistent(assignment: &[(&Atom, bool)]) -> bool {
    let get = |atom: &Atom| lookup(assignment, atom);
    for (atom, value) in assignment {
        match atom {
            Atom::IsTrue(k) => {
                let set = get(&Atom::IsSet(k.clone()));
                if *value && set == Some(false) {
                    return false;
                }
            }
            Atom::Eq(k, v) => {
                let set = get(&Atom::IsSet(k.clone()));
                let is_true = get(&Atom::IsTrue(k.clone()));
                if v.is_null() {
                    // Null is "not set".
                    if set.is_some_and(|s| s == *value) {
                        return false;
                    }
                    if *value && is_true == Some(true) {
                        return false;
                    }
                } else if *value && set == Some(false) {
                    return false;
                }
                if let Some(t) = is_true {
                    // `is_true` is exactly `eq: true`.
                    if (*v == Value::Bool(true)) && t != *value {
                        return false;
                    }
                    if *value && t && *v != Value::Bool(true) {
                        return false;
                    }
                }
                // One key holds one value.
                let other_true = assignment.iter().any(|(b, w)| {
                    *w && matches!(b, Atom::Eq(k2, v2) if k2 == k && !values_equal(v, v2))
                });
                if *value && other_true {
                    return false;
                }
            }
            _ => {}
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn g(value: Value) -> Guard {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn ordinary_guards_are_satisfiable() {
        for guard in [
            json!("always"),
            json!({"is_true": "x"}),
            json!({"all": [{"is_true": "x"}, {"called_ok": "t"}]}),
            json!({"any": [{"is_true": "x"}, {"not": {"is_true": "x"}}]}),
            json!({"not": {"is_set": "x"}}),
            json!({"eq": {"x": null}}),
        ] {
            assert!(satisfiable(&g(guard.clone()), &[]), "{guard}");
        }
    }

    #[test]
    fn contradictions_are_found() {
        for guard in [
            json!({"not": "always"}),
            json!({"all": [{"is_true": "x"}, {"not": {"is_true": "x"}}]}),
            json!({"all": [{"eq": {"x": 1}}, {"eq": {"x": 2}}]}),
            json!({"all": [{"is_true": "x"}, {"not": {"is_set": "x"}}]}),
            json!({"all": [{"is_true": "x"}, {"eq": {"x": false}}]}),
            json!({"all": [{"eq": {"x": null}}, {"is_set": "x"}]}),
            json!({"any": []}),
        ] {
            assert!(!satisfiable(&g(guard.clone()), &[]), "{guard}");
        }
    }

    #[test]
    fn fixed_facts_are_respected() {
        let guard = g(json!({"not": {"done": "a"}}));
        assert!(satisfiable(&guard, &[]));
        assert!(!satisfiable(&guard, &[(Atom::Done("a".into()), true)]));
    }

    #[test]
    fn only_successes_reached_through_all_are_necessary() {
        let mut out = Vec::new();
        necessary_successes(
            &g(
                json!({"all": [{"called_ok": "a"}, {"any": [{"called_ok": "b"}]}, {"not": {"called_ok": "c"}}]}),
            ),
            &mut out,
        );
        assert_eq!(out, ["a"]);
    }
}
