//! Resume: rebuilding a history from rollout lines (reference §2.6).
