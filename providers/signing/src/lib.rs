//! Cloud request signers (in progress).
