//! A governed conversation as a model and an operator see it: where it stands,
//! the tools offered now (blocked ones hidden or marked), and the planner digest.

use serde_json::{Map, Value};
use toolgate_core::flow::{Flow, FlowView, FlowVisibility, Monitor, is_visible, visible_tools};
use toolgate_core::{
    Principal, RuleOfTwo, Seen, SeenLabel, ToolDescriptor, planner_digest, planner_digest_in_flow,
};

use super::admission::call_records;
use crate::gate::Gate;
use crate::store::{RecordedCall, StoreError};

impl Gate {
    /// The flow the gate enforces, if its spec file has one.
    pub fn flow(&self) -> Option<&Flow> {
        self.flow.flow()
    }

    /// How the gate shows a model the tools its flow blocks.
    pub fn flow_visibility(&self) -> FlowVisibility {
        self.flow.visibility()
    }

    /// Where conversation `session` stands: active and done steps and every
    /// tool's status; `None` when the gate has no flow.
    pub fn flow_view(&self, session: &str) -> Result<Option<FlowView>, StoreError> {
        match self.flow() {
            Some(_) => self.flow_view_in(session, &self.state(session)?, None),
            None => Ok(None),
        }
    }

    /// [`flow_view`](Self::flow_view) as `principal` may see it: only the tools
    /// in its view, and reasons that name no other tool ("blocked until a step
    /// you cannot take has been done"); the details for people are left out.
    pub fn flow_view_for(
        &self,
        session: &str,
        principal: &Principal,
    ) -> Result<Option<FlowView>, StoreError> {
        match self.flow() {
            Some(_) => self.flow_view_in(session, &self.state(session)?, Some(principal)),
            None => Ok(None),
        }
    }

    /// [`flow_view`](Self::flow_view) of a conversation whose `state` (with the
    /// declared defaults) is already loaded; for `principal`, as
    /// [`flow_view_for`](Self::flow_view_for).
    pub(crate) fn flow_view_in(
        &self,
        session: &str,
        state: &Map<String, Value>,
        principal: Option<&Principal>,
    ) -> Result<Option<FlowView>, StoreError> {
        let Some(flow) = self.flow() else {
            return Ok(None);
        };
        let history = call_records(self, session)?;
        let tools = self.catalog().iter().map(|t| t.name());
        Ok(Some(match principal {
            Some(principal) => {
                let sees = self.may_name_to(principal);
                Monitor::new(flow)
                    .seen_by(&sees)
                    .view(state, &history, tools)
            }
            None => Monitor::new(flow).view(state, &history, tools),
        }))
    }

    /// What the rule of two will do with the next call that changes the world
    /// or sends data out in a conversation that has `seen` what it has
    /// ([`seen`](Self::seen)): [`RuleOfTwo::Ask`] or [`RuleOfTwo::Deny`] as the
    /// policy says once it has seen both untrusted content and private data;
    /// `None` before that, or when the policy turns the rule off.
    pub fn rule_of_two_ahead(&self, seen: &Seen) -> Option<RuleOfTwo> {
        let rule = self.policy().rule_of_two;
        let both = seen.has(SeenLabel::Untrusted) && seen.has(SeenLabel::Private);
        (both && rule != RuleOfTwo::Off).then_some(rule)
    }

    /// The calls that ran in conversation `session`, oldest first.
    pub fn history(&self, session: &str) -> Result<Vec<RecordedCall>, StoreError> {
        self.store().calls(session)
    }

    /// The catalog's descriptors as a model should be offered them now in
    /// `session`: every tool without a flow; with one, blocked tools hidden or
    /// marked (see [`GateBuilder::flow_visibility`](crate::GateBuilder::flow_visibility)).
    /// Render these with any wire target, or list them over MCP.
    pub fn visible_tools(&self, session: &str) -> Result<Vec<ToolDescriptor>, StoreError> {
        self.visible_tools_for(session, &Principal::operator())
    }

    /// [`visible_tools`](Self::visible_tools) for `principal`: only the tools in
    /// its view, a marked tool's reason naming no other tool.
    pub fn visible_tools_for(
        &self,
        session: &str,
        principal: &Principal,
    ) -> Result<Vec<ToolDescriptor>, StoreError> {
        let tools: Vec<ToolDescriptor> = self
            .catalog()
            .iter()
            .map(|t| t.descriptor())
            .filter(|d| principal.sees(d))
            .cloned()
            .collect();
        Ok(match self.flow_view_for(session, principal)? {
            Some(view) => visible_tools(&tools, &view, self.flow_visibility()),
            None => tools,
        })
    }

    /// The names of the tools [`visible_tools`](Self::visible_tools) returns, in
    /// catalog order, without copying a descriptor: enough to tell whether what a
    /// model is offered changed.
    pub fn visible_tool_names(&self, session: &str) -> Result<Vec<&str>, StoreError> {
        let names = self.catalog().iter().map(|t| t.name());
        Ok(match self.flow_view(session)? {
            Some(view) => names
                .filter(|name| {
                    view.tools
                        .get(*name)
                        .is_none_or(|status| is_visible(status, self.flow_visibility()))
                })
                .collect(),
            None => names.collect(),
        })
    }

    /// The planner digest for `principal` in `session`: with a flow, it opens with
    /// the active steps' instructions and hides or marks blocked tools.
    pub fn planner_digest(
        &self,
        session: &str,
        principal: &Principal,
    ) -> Result<String, StoreError> {
        let tools: Vec<ToolDescriptor> = self
            .catalog()
            .iter()
            .map(|t| t.descriptor().clone())
            .collect();
        Ok(match self.flow_view_for(session, principal)? {
            Some(view) => planner_digest_in_flow(
                &tools,
                self.policy(),
                principal,
                &view,
                self.flow_visibility(),
            ),
            None => planner_digest(&tools, self.policy(), principal),
        })
    }
}
