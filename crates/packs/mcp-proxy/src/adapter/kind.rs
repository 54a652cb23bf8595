//! Which adapter previews a tool's calls ([`super`]).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Adapter {
    WriteFile,
    EditFile,
    MoveFile,
    CreateDirectory,
    GitCommit,
    GitAdd,
    GitReset,
    GitCheckout,
    GitCreateBranch,
}

impl Adapter {
    pub fn reads_files(self) -> bool {
        matches!(
            self,
            Adapter::WriteFile | Adapter::EditFile | Adapter::MoveFile | Adapter::CreateDirectory
        )
    }
}
