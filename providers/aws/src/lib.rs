//! AWS provider (in progress).
