//! The rollout writer.
