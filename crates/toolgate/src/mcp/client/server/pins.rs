//! An upstream tool checked against its pin: quarantined when its definition
//! changed, released once the change is accepted (skills: see `skills.rs`).

use super::*;

impl Server {
    pub(super) fn check_pin(&self, tool: &RemoteTool) -> Option<Quarantine> {
        let pins = self.pins.as_ref()?;
        match pins.observe_tool(&tool.descriptor.name, &tool.definition, SystemTime::now()) {
            Ok(PinCheck::Pinned | PinCheck::Matches) => None,
            Ok(PinCheck::Changed(pin)) => Some(Quarantine::Changed {
                fields: pin.changed_fields(),
                pinned_at: pin.pinned_at,
            }),
            Err(e) => Some(Quarantine::Unchecked {
                problem: e.to_string(),
            }),
        }
    }

    /// Releases quarantined tools whose change was accepted since (perhaps by
    /// another process), so they are offered again.
    pub(crate) fn release_accepted(&self) {
        self.release_accepted_skills();
        let quarantined: Vec<ListedTool> = self
            .shared()
            .tools
            .values()
            .filter(|l| matches!(l.quarantine, Some(Quarantine::Changed { .. })))
            .cloned()
            .collect();
        for listed in quarantined {
            self.release_if_accepted(&listed);
        }
    }

    /// Releases one quarantined tool if its current definition is now its pin.
    fn release_if_accepted(&self, listed: &ListedTool) -> bool {
        let Some(pins) = &self.pins else {
            return false;
        };
        if !matches!(listed.quarantine, Some(Quarantine::Changed { .. })) {
            return false;
        }
        let accepted = pins
            .pin(&listed.tool.descriptor.name)
            .ok()
            .flatten()
            .is_some_and(|pin| pin.hash == content_hash(&listed.tool.definition));
        if accepted {
            if let Some(entry) = self.shared().tools.get_mut(&listed.tool.name) {
                entry.quarantine = None;
            }
            let _ = self.events.send(UpstreamEvent::ToolsChanged {
                server: self.config.name.clone(),
            });
        }
        accepted
    }

    /// Refuses a call to a tool that is quarantined or no longer listed. A quarantined
    /// tool whose change was accepted since (perhaps by another process) is released.
    pub(crate) fn check_tool(&self, remote: &str, catalog_name: &str) -> Result<(), ToolError> {
        // Only a quarantined tool's listing is needed past the lock; most calls
        // clone nothing.
        let listed = match self.shared().tools.get(remote) {
            Some(listed) if listed.quarantine.is_none() => return Ok(()),
            other => other.cloned(),
        };
        let Some(listed) = listed else {
            let state = self.state();
            if matches!(state, ServerState::Ready) {
                return Err(ToolError::permanent(format!(
                    "{} no longer offers `{remote}`; it left the server's tool list",
                    self.label
                )));
            }
            return Ok(());
        };
        let Some(quarantine) = &listed.quarantine else {
            return Ok(());
        };
        if self.release_if_accepted(&listed) {
            return Ok(());
        }
        Err(ToolError::permanent(format!(
            "it is quarantined and was not run: {}. The operator must review the change \
             (`toolgate pins diff {catalog_name}`) and accept it (`toolgate pins accept {catalog_name}`)",
            quarantine.reason(&self.label)
        )))
    }
}
