//! The server's skills (SEP-2640) into the owner's catalog: listed, each
//! checked and its `SKILL.md` read and verified, then checked against its pin,
//! a changed one quarantined until the operator accepts it.

use std::collections::BTreeMap;

use rmcp::model::Skill as ListedSkill;
use toolgate_core::escape_for_terminal;
use toolgate_core::skill::{SKILL_MD, Skill, SkillOrigin, skill_pin_key};

use super::super::skills::{Manifest, UpstreamFiles, check_entry, fetch, is_accepted, skill_of};
use super::*;
use crate::skills::SkillEntry;

impl Server {
    /// Lists the server's skills into the catalog (none when it does not
    /// declare the extension), and tells the owner when they changed.
    pub(super) async fn list_skills(&self, peer: &Peer<RoleClient>) -> Result<(), String> {
        let Some(catalog) = &self.skills else {
            return Ok(());
        };
        let label = &self.label;
        let declared = peer
            .peer_info()
            .is_some_and(|info| info.capabilities.supports_skills());
        let listed = if declared {
            let list = peer.list_all_skills();
            match tokio::time::timeout(self.config.list_timeout, list).await {
                Ok(Ok(skills)) => skills,
                Ok(Err(e)) => return Err(format!("{label} failed to list its skills ({e})")),
                Err(_) => {
                    return Err(format!(
                        "{label} did not list its skills within {}",
                        humantime::format_duration(self.config.list_timeout)
                    ));
                }
            }
        } else {
            Vec::new()
        };
        let mut entries: Vec<SkillEntry> = Vec::new();
        let mut skipped = Vec::new();
        // The first entry listed under a name or URI keeps it, whether or not it is offered.
        let mut seen: Vec<(&str, &str)> = Vec::new();
        for listed in &listed {
            let shown = escape_for_terminal(listed.name()).into_owned();
            let entry = match seen
                .iter()
                .find(|(n, u)| *n == listed.name() || *u == listed.uri)
            {
                Some((_, uri)) if *uri == listed.uri => Err("the server lists it twice".to_owned()),
                Some((_, uri)) => Err(format!(
                    "the server lists another skill of this name first (at `{}`); one does not take the other's place, so only that one can be offered",
                    escape_for_terminal(uri)
                )),
                None => self.upstream_skill(peer, listed).await,
            };
            seen.push((listed.name(), &listed.uri));
            match entry {
                Ok(entry) => entries.push(entry),
                Err(reason) => {
                    tracing::warn!(server = %self.config.name, "skill `{shown}` is left out: {reason}");
                    skipped.push((shown, reason));
                }
            }
        }
        let before = self.skill_standing();
        catalog.set_upstream(&self.config.name, entries);
        self.shared().skipped_skills = skipped;
        if self.skill_standing() != before {
            let _ = self.events.send(UpstreamEvent::ToolsChanged {
                server: self.config.name.clone(),
            });
        }
        Ok(())
    }

    /// One listed skill as a catalog entry: checked, its `SKILL.md` read and
    /// verified, and checked against its pin.
    async fn upstream_skill(
        &self,
        peer: &Peer<RoleClient>,
        listed: &ListedSkill,
    ) -> Result<SkillEntry, String> {
        let manifest = check_entry(listed)?;
        let bytes = match self.held_skill_md(&manifest) {
            Some(held) => held,
            None => fetch(peer, manifest.skill_md(), self.config.call_timeout)
                .await
                .map_err(|e| format!("its SKILL.md could not be used: {e}"))?,
        };
        let skill = skill_of(&self.config.name, &manifest, &bytes)?;
        let quarantine = self.check_skill_pin(&skill);
        if let Some(reason) = &quarantine {
            tracing::warn!(server = %self.config.name, "skill `{}` is quarantined: {reason}", skill.name);
        }
        let files = UpstreamFiles {
            server: self.config.name.clone(),
            peer: peer.clone(),
            files: manifest.files.iter().cloned().collect::<BTreeMap<_, _>>(),
            timeout: self.config.call_timeout,
            pins: self.pins.clone(),
            events: self.events.clone(),
            fetched: Default::default(),
        };
        Ok(SkillEntry::new(skill, quarantine, Arc::new(files)))
    }

    /// The `SKILL.md` the catalog holds for `manifest`'s skill, if its digest
    /// is still the one listed: a listing again reads only what changed.
    fn held_skill_md(&self, manifest: &Manifest) -> Option<Vec<u8>> {
        let catalog = self.skills.as_ref()?;
        let entries = catalog.entries();
        let held = entries.iter().find(|e| {
            self.is_ours(&e.skill)
                && matches!(&e.skill.origin, SkillOrigin::Upstream { uri, .. } if *uri == manifest.uri)
        })?;
        let skill_md = held.skill.file(SKILL_MD)?;
        (skill_md.digest == manifest.skill_md().digest)
            .then(|| held.skill.instructions.clone().into_bytes())
    }

    /// Why `skill` is quarantined, if its definition differs from its pin.
    fn check_skill_pin(&self, skill: &Skill) -> Option<String> {
        let pins = self.pins.as_ref()?;
        let key = skill_pin_key(&skill.name);
        let quarantine = match pins.observe_tool(&key, &skill.pin_definition(), SystemTime::now()) {
            Ok(PinCheck::Pinned | PinCheck::Matches) => return None,
            Ok(PinCheck::Changed(pin)) => Quarantine::Changed {
                fields: pin.changed_fields(),
                pinned_at: pin.pinned_at,
            },
            Err(e) => Quarantine::Unchecked {
                problem: e.to_string(),
            },
        };
        Some(quarantine.reason(&self.label))
    }

    /// Releases this server's quarantined skills whose change was accepted since
    /// (perhaps by another process).
    pub(super) fn release_accepted_skills(&self) {
        let Some(catalog) = &self.skills else {
            return;
        };
        let mut released = false;
        for entry in catalog.entries().iter() {
            let ours = self.is_ours(&entry.skill);
            if ours && entry.quarantine.is_some() && is_accepted(self.pins.as_deref(), &entry.skill)
            {
                released |= catalog.release(&entry.skill.name);
            }
        }
        if released {
            let _ = self.events.send(UpstreamEvent::ToolsChanged {
                server: self.config.name.clone(),
            });
        }
    }

    /// This server's skills, quarantined or not, with their pinned definitions:
    /// what a change to tell the owner about changes.
    fn skill_standing(&self) -> Vec<(String, bool, Value)> {
        let Some(catalog) = &self.skills else {
            return Vec::new();
        };
        catalog
            .entries()
            .iter()
            .filter(|e| self.is_ours(&e.skill))
            .map(|e| {
                let definition = e.skill.pin_definition();
                (e.skill.name.clone(), e.quarantine.is_some(), definition)
            })
            .collect()
    }

    /// This server's skills withheld until their change is accepted.
    pub(crate) fn quarantined_skills(&self) -> Vec<String> {
        let Some(catalog) = &self.skills else {
            return Vec::new();
        };
        catalog
            .entries()
            .iter()
            .filter(|e| e.quarantine.is_some() && self.is_ours(&e.skill))
            .map(|e| e.skill.name.clone())
            .collect()
    }

    fn is_ours(&self, skill: &Skill) -> bool {
        matches!(&skill.origin, SkillOrigin::Upstream { server, .. } if *server == self.config.name)
    }
}
