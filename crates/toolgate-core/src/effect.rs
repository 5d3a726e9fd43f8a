//! The one safety model: what a tool does to the world, and everything derived from it.
//!
//! A tool declares a single [`Effect`]. Retry behaviour, the permission [`Tier`] and the
//! MCP tool annotations are all read off it through the table below, which is the only
//! place these vocabularies meet.
//!
//! | effect        | tier        | retry        | readOnly | destructive | idempotent | openWorld |
//! |---------------|-------------|--------------|----------|-------------|------------|-----------|
//! | `read`        | read        | freely       | true     | false       | true       | false     |
//! | `idempotent`  | write       | with its key | false    | false       | true       | false     |
//! | `write`       | write       | never        | false    | false       | false      | false     |
//! | `execute`     | execute     | never        | false    | true        | false      | false     |
//! | `destructive` | destructive | never        | false    | true        | false      | false     |
//! | `external`    | external    | never        | false    | true        | false      | true      |
//!
//! Reading annotations back ([`Effect::from_annotations`]) is conservative: MCP's own
//! defaults apply to missing hints (`readOnly` false, `destructive` true, `idempotent`
//! false, `openWorld` true), so a tool with no hints is `external`, the most guarded
//! class. MCP has no hint for "runs code", so `execute` reads back as `destructive`,
//! the next stricter class.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What calling a tool does to the world. Drives retries, consent and MCP annotations.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Observes only; safe to repeat.
    Read,
    /// Changes state, but repeating it with the same idempotency key changes nothing more.
    Idempotent,
    /// Changes state; repeating it may change it again.
    Write,
    /// Runs code or commands.
    Execute,
    /// Deletes or overwrites what cannot be recovered.
    Destructive,
    /// Acts outside the system: sends mail, pays, posts publicly.
    External,
}

/// Permission tiers, ordered from least to most guarded: `read < write < execute <
/// destructive < external`. A principal's ceiling is a tier.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// Tools that only observe.
    Read,
    /// Tools that change state, idempotently or not.
    Write,
    /// Tools that run code or commands.
    Execute,
    /// Tools that delete or overwrite what cannot be recovered.
    Destructive,
    /// Tools that act outside the system.
    External,
}

/// When a failed call may be tried again without asking anyone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Retry {
    /// Retry freely with backoff.
    Freely,
    /// Retry only with the same idempotency key.
    WithSameKey,
    /// Never retry automatically.
    Never,
}

/// MCP tool annotations (`readOnlyHint`, `destructiveHint`, `idempotentHint`,
/// `openWorldHint`). `None` means the hint was not given.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// `readOnlyHint`: the tool does not change its environment (MCP's default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// `destructiveHint`: a change it makes may destroy (MCP's default: true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// `idempotentHint`: repeating it with the same arguments changes nothing more
    /// (MCP's default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// `openWorldHint`: it reaches outside the system (MCP's default: true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// Everything derived from an effect, as one serializable value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Safety {
    /// The permission tier a principal's ceiling is compared with.
    pub tier: Tier,
    /// When a failed call may be tried again.
    pub retry: Retry,
    /// The MCP hints, every one given.
    pub annotations: Annotations,
}

/// One row of the mapping table: (effect, tier, retry, [readOnly, destructive, idempotent, openWorld]).
type Row = (Effect, Tier, Retry, [bool; 4]);

/// The mapping table of the module docs. Every conversion reads this and nothing else.
const TABLE: [Row; 6] = [
    (
        Effect::Read,
        Tier::Read,
        Retry::Freely,
        [true, false, true, false],
    ),
    (
        Effect::Idempotent,
        Tier::Write,
        Retry::WithSameKey,
        [false, false, true, false],
    ),
    (
        Effect::Write,
        Tier::Write,
        Retry::Never,
        [false, false, false, false],
    ),
    (
        Effect::Execute,
        Tier::Execute,
        Retry::Never,
        [false, true, false, false],
    ),
    (
        Effect::Destructive,
        Tier::Destructive,
        Retry::Never,
        [false, true, false, false],
    ),
    (
        Effect::External,
        Tier::External,
        Retry::Never,
        [false, true, false, true],
    ),
];

impl Effect {
    /// Every effect, from least to most guarded.
    pub const ALL: [Effect; 6] = [
        Effect::Read,
        Effect::Idempotent,
        Effect::Write,
        Effect::Execute,
        Effect::Destructive,
        Effect::External,
    ];

    fn row(self) -> &'static Row {
        // The table lists every effect in declaration order.
        &TABLE[self as usize]
    }

    /// The permission tier a call with this effect needs.
    pub fn tier(self) -> Tier {
        self.row().1
    }

    /// Whether and how a failed call may be retried automatically.
    pub fn retry(self) -> Retry {
        self.row().2
    }

    /// The MCP annotations that describe this effect, every hint given.
    pub fn annotations(self) -> Annotations {
        let [read_only, destructive, idempotent, open_world] = self.row().3;
        Annotations {
            read_only_hint: Some(read_only),
            destructive_hint: Some(destructive),
            idempotent_hint: Some(idempotent),
            open_world_hint: Some(open_world),
        }
    }

    /// All derived fields at once.
    pub fn safety(self) -> Safety {
        Safety {
            tier: self.tier(),
            retry: self.retry(),
            annotations: self.annotations(),
        }
    }

    /// Reads MCP annotations conservatively: missing hints take MCP's defaults, and
    /// anything not explicitly read-only, closed-world and non-destructive is guarded
    /// as such.
    pub fn from_annotations(a: &Annotations) -> Effect {
        let read_only = a.read_only_hint.unwrap_or(false);
        let destructive = a.destructive_hint.unwrap_or(true);
        let idempotent = a.idempotent_hint.unwrap_or(false);
        let open_world = a.open_world_hint.unwrap_or(true);
        if read_only {
            Effect::Read
        } else if open_world {
            Effect::External
        } else if destructive {
            Effect::Destructive
        } else if idempotent {
            Effect::Idempotent
        } else {
            Effect::Write
        }
    }

    /// The lowest-guarded effect whose tier is `tier`.
    pub fn from_tier(tier: Tier) -> Effect {
        TABLE
            .iter()
            .find(|row| row.1 == tier)
            .map(|row| row.0)
            .unwrap_or(Effect::External)
    }

    /// The spelling used in spec files and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Read => "read",
            Effect::Idempotent => "idempotent",
            Effect::Write => "write",
            Effect::Execute => "execute",
            Effect::Destructive => "destructive",
            Effect::External => "external",
        }
    }
}

impl Tier {
    /// Every tier, in order.
    pub const ALL: [Tier; 5] = [
        Tier::Read,
        Tier::Write,
        Tier::Execute,
        Tier::Destructive,
        Tier::External,
    ];

    /// The spelling used in spec files and usage guidance.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Read => "read",
            Tier::Write => "write",
            Tier::Execute => "execute",
            Tier::Destructive => "destructive",
            Tier::External => "external",
        }
    }
}

/// An effect or tier name that is not one of the known spellings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} `{given}`: expected one of {expected}")]
pub struct UnknownName {
    kind: &'static str,
    given: String,
    expected: String,
}

impl UnknownName {
    fn new(kind: &'static str, given: &str, expected: impl Iterator<Item = &'static str>) -> Self {
        let expected = expected
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", ");
        UnknownName {
            kind,
            given: given.to_owned(),
            expected,
        }
    }
}

impl FromStr for Effect {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Effect::ALL
            .into_iter()
            .find(|e| e.as_str() == s)
            .ok_or_else(|| UnknownName::new("effect", s, Effect::ALL.iter().map(|e| e.as_str())))
    }
}

impl FromStr for Tier {
    type Err = UnknownName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Tier::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| UnknownName::new("tier", s, Tier::ALL.iter().map(|t| t.as_str())))
    }
}

impl fmt::Display for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hints(
        read_only: bool,
        destructive: bool,
        idempotent: bool,
        open_world: bool,
    ) -> Annotations {
        Annotations {
            read_only_hint: Some(read_only),
            destructive_hint: Some(destructive),
            idempotent_hint: Some(idempotent),
            open_world_hint: Some(open_world),
        }
    }

    #[test]
    fn the_table_lists_every_effect_in_declaration_order() {
        for (i, effect) in Effect::ALL.into_iter().enumerate() {
            assert_eq!(TABLE[i].0, effect);
        }
    }

    #[test]
    fn effects_map_to_tiers_and_retries_as_documented() {
        let expected = [
            (Effect::Read, Tier::Read, Retry::Freely),
            (Effect::Idempotent, Tier::Write, Retry::WithSameKey),
            (Effect::Write, Tier::Write, Retry::Never),
            (Effect::Execute, Tier::Execute, Retry::Never),
            (Effect::Destructive, Tier::Destructive, Retry::Never),
            (Effect::External, Tier::External, Retry::Never),
        ];
        for (effect, tier, retry) in expected {
            assert_eq!((effect.tier(), effect.retry()), (tier, retry), "{effect}");
        }
    }

    #[test]
    fn effects_map_to_mcp_annotations_as_documented() {
        assert_eq!(Effect::Read.annotations(), hints(true, false, true, false));
        assert_eq!(
            Effect::Idempotent.annotations(),
            hints(false, false, true, false)
        );
        assert_eq!(
            Effect::Write.annotations(),
            hints(false, false, false, false)
        );
        assert_eq!(
            Effect::Execute.annotations(),
            hints(false, true, false, false)
        );
        assert_eq!(
            Effect::Destructive.annotations(),
            hints(false, true, false, false)
        );
        assert_eq!(
            Effect::External.annotations(),
            hints(false, true, false, true)
        );
    }

    #[test]
    fn annotations_read_back_to_the_same_effect_except_execute() {
        for effect in Effect::ALL {
            let back = Effect::from_annotations(&effect.annotations());
            if effect == Effect::Execute {
                assert_eq!(
                    back,
                    Effect::Destructive,
                    "execute has no MCP hint; it reads back stricter"
                );
            } else {
                assert_eq!(back, effect);
            }
            assert!(
                back.tier() >= effect.tier(),
                "reading back never loosens the guard"
            );
        }
    }

    #[test]
    fn a_tool_with_no_hints_reads_as_the_most_guarded_class() {
        assert_eq!(
            Effect::from_annotations(&Annotations::default()),
            Effect::External
        );
    }

    #[test]
    fn partial_hints_fall_back_to_mcp_defaults() {
        let closed_world = Annotations {
            open_world_hint: Some(false),
            ..Default::default()
        };
        assert_eq!(Effect::from_annotations(&closed_world), Effect::Destructive);
        let additive = Annotations {
            destructive_hint: Some(false),
            open_world_hint: Some(false),
            ..Default::default()
        };
        assert_eq!(Effect::from_annotations(&additive), Effect::Write);
        let read_only = Annotations {
            read_only_hint: Some(true),
            ..Default::default()
        };
        assert_eq!(Effect::from_annotations(&read_only), Effect::Read);
    }

    #[test]
    fn every_combination_of_hints_reads_as_some_effect_no_looser_than_its_hints() {
        let options = [None, Some(false), Some(true)];
        for r in options {
            for d in options {
                for i in options {
                    for o in options {
                        let a = Annotations {
                            read_only_hint: r,
                            destructive_hint: d,
                            idempotent_hint: i,
                            open_world_hint: o,
                        };
                        let effect = Effect::from_annotations(&a);
                        if r != Some(true) {
                            assert_ne!(effect, Effect::Read, "{a:?}");
                        }
                        if o != Some(false) && r != Some(true) {
                            assert_eq!(effect, Effect::External, "{a:?}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn tiers_are_ordered_from_read_to_external() {
        assert!(Tier::Read < Tier::Write);
        assert!(Tier::Write < Tier::Execute);
        assert!(Tier::Execute < Tier::Destructive);
        assert!(Tier::Destructive < Tier::External);
    }

    #[test]
    fn tier_and_effect_strings_round_trip() {
        for effect in Effect::ALL {
            assert_eq!(effect.as_str().parse::<Effect>(), Ok(effect));
            assert_eq!(serde_json::to_value(effect).unwrap(), effect.as_str());
        }
        for tier in Tier::ALL {
            assert_eq!(tier.as_str().parse::<Tier>(), Ok(tier));
            assert_eq!(Effect::from_tier(tier).tier(), tier);
        }
        let err = "delete".parse::<Effect>().unwrap_err().to_string();
        assert!(
            err.contains("unknown effect `delete`") && err.contains("`destructive`"),
            "{err}"
        );
    }
}
