//! What validation reports: one finding per problem, with where and what.

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Finding {
    pub file: String,
    pub line: usize,
    pub column: usize,
    /// The field path inside the document ("spec.replicatedJobs[0].name").
    pub path: String,
    pub message: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Line 0: a finding with no place in a file (a `--set` flag's).
        if self.line == 0 {
            return write!(f, "{}: {}: {}", self.file, self.path, self.message);
        }
        write!(
            f,
            "{}:{}:{}: {}: {}",
            self.file, self.line, self.column, self.path, self.message
        )
    }
}
