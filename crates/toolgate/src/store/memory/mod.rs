//! The in-memory backend: every store concern kept in the process, for tests and
//! throwaway runs. Nothing here outlives the process or is shared with another one.
//!
//! Each file implements the trait of the same name at the top of `store/`;
//! [`MemoryGateStore`] puts them together behind [`GateStore`](crate::store::GateStore).

mod approvals;
mod audit;
mod budget_counters;
mod call_ledger;
mod calls;
mod code_runs;
mod gate_store;
mod pins;
mod sessions;
mod state;
mod tasks;
mod turns;
mod untrusted_text;

pub use approvals::MemoryApprovals;
pub use audit::MemoryAuditLog;
pub use budget_counters::MemoryBudgetCounters;
pub use call_ledger::MemoryCallLedger;
pub use calls::MemoryCallHistory;
pub use code_runs::MemoryCodeRuns;
pub use gate_store::MemoryGateStore;
pub use pins::MemoryPins;
pub use sessions::MemorySessions;
pub use state::MemoryStore;
pub use tasks::MemoryTasks;
pub use untrusted_text::MemoryUntrustedText;
