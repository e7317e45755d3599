//! [`FragmentRole`]: the role of the message a contextual fragment goes in.

use crate::item::Role;

/// The role of the message a [`ContextualFragment`](super::ContextualFragment) goes in: world
/// state is shown to the model as `user` or `developer` messages, never as the model's own words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FragmentRole {
    /// A `user` message (context a harness speaks for the user, such as the environment).
    User,
    /// A `developer` message (instructions).
    Developer,
}

impl FragmentRole {
    /// The wire name: `user` or `developer`.
    pub fn as_str(self) -> &'static str {
        self.role().as_str()
    }

    /// The message [`Role`].
    pub fn role(self) -> Role {
        match self {
            FragmentRole::User => Role::User,
            FragmentRole::Developer => Role::Developer,
        }
    }

    /// The fragment role of a message role (`None` for `assistant` and `system`).
    pub fn from_role(role: Role) -> Option<FragmentRole> {
        match role {
            Role::User => Some(FragmentRole::User),
            Role::Developer => Some(FragmentRole::Developer),
            Role::Assistant | Role::System => None,
        }
    }
}

impl From<FragmentRole> for Role {
    fn from(role: FragmentRole) -> Role {
        role.role()
    }
}
