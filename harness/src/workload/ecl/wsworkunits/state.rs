//! A workunit's state: HPCC's WUState, whose lower-case name ESP sends as
//! `State` and whose number as `StateID`.

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

/// A workunit's state (HPCC's WUState; `State` is its lower-case name,
/// `StateID` its number).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WuState {
    Unknown,
    Compiled,
    Running,
    Completed,
    Failed,
    Archived,
    Aborting,
    Aborted,
    Blocked,
    Submitted,
    Scheduled,
    Compiling,
    Wait,
    UploadingFiles,
    Debugging,
    DebugRunning,
    Paused,
}

/// (StateID, State) in WUState order.
const STATES: &[(WuState, &str)] = &[
    (WuState::Unknown, "unknown"),
    (WuState::Compiled, "compiled"),
    (WuState::Running, "running"),
    (WuState::Completed, "completed"),
    (WuState::Failed, "failed"),
    (WuState::Archived, "archived"),
    (WuState::Aborting, "aborting"),
    (WuState::Aborted, "aborted"),
    (WuState::Blocked, "blocked"),
    (WuState::Submitted, "submitted"),
    (WuState::Scheduled, "scheduled"),
    (WuState::Compiling, "compiling"),
    (WuState::Wait, "wait"),
    (WuState::UploadingFiles, "uploading_files"),
    (WuState::Debugging, "debugging"),
    (WuState::DebugRunning, "debug_running"),
    (WuState::Paused, "paused"),
];

impl WuState {
    pub fn from_id(id: i64) -> Option<WuState> {
        usize::try_from(id)
            .ok()
            .and_then(|i| STATES.get(i))
            .map(|(s, _)| *s)
    }

    /// From ESP's `State` text (case-insensitive).
    pub fn from_name(name: &str) -> Option<WuState> {
        let n = name.trim().to_ascii_lowercase();
        STATES.iter().find(|(_, s)| *s == n).map(|(s, _)| *s)
    }

    pub fn id(self) -> i64 {
        STATES.iter().position(|(s, _)| *s == self).unwrap_or(0) as i64
    }

    pub fn name(self) -> &'static str {
        STATES
            .iter()
            .find(|(s, _)| *s == self)
            .map_or("unknown", |(_, n)| n)
    }

    /// The state of an ECLWorkunit: `StateID` when it is a known number,
    /// else the `State` text. Err when they disagree or neither is known.
    pub fn from_esp(state: Option<&str>, state_id: Option<i64>) -> Result<WuState> {
        let by_id = state_id.and_then(WuState::from_id);
        let by_name = state.and_then(WuState::from_name);
        match (by_id, by_name) {
            (Some(a), Some(b)) if a != b => bail!(
                "StateID {} ({}) disagrees with State {:?}",
                state_id.unwrap_or_default(),
                a.name(),
                state.unwrap_or_default()
            ),
            (Some(a), _) | (None, Some(a)) => Ok(a),
            (None, None) => bail!(
                "unknown workunit state (State {:?}, StateID {:?})",
                state.unwrap_or(""),
                state_id
            ),
        }
    }

    /// The workunit will not change state again by itself.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            WuState::Completed | WuState::Failed | WuState::Aborted | WuState::Archived
        )
    }
}

impl std::fmt::Display for WuState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_map_from_ids_and_names() {
        assert_eq!(WuState::from_id(3), Some(WuState::Completed));
        assert_eq!(WuState::from_id(11), Some(WuState::Compiling));
        assert_eq!(WuState::from_id(9), Some(WuState::Submitted));
        assert_eq!(WuState::from_id(7), Some(WuState::Aborted));
        assert_eq!(WuState::from_id(-1), None);
        assert_eq!(WuState::from_id(17), None);
        assert_eq!(WuState::from_name("Running"), Some(WuState::Running));
        assert_eq!(WuState::from_name("blocked"), Some(WuState::Blocked));
        assert_eq!(WuState::from_name("wait"), Some(WuState::Wait));
        assert_eq!(WuState::from_name("finished"), None);
        for (i, (s, n)) in STATES.iter().enumerate() {
            assert_eq!(s.id(), i as i64);
            assert_eq!(s.name(), *n);
            assert_eq!(WuState::from_name(n), Some(*s));
        }
        assert_eq!(
            WuState::from_esp(Some("failed"), Some(4)).unwrap(),
            WuState::Failed
        );
        assert_eq!(WuState::from_esp(None, Some(8)).unwrap(), WuState::Blocked);
        assert_eq!(
            WuState::from_esp(Some("compiled"), None).unwrap(),
            WuState::Compiled
        );
        let e = WuState::from_esp(Some("running"), Some(3)).unwrap_err();
        assert!(format!("{e}").contains("disagrees"), "{e}");
        assert!(WuState::from_esp(Some("??"), Some(99)).is_err());
        let finals: Vec<_> = STATES.iter().filter(|(s, _)| s.is_final()).collect();
        assert_eq!(finals.len(), 4);
        assert!(!WuState::Compiled.is_final() && !WuState::Blocked.is_final());
    }
}
