//! huawei API stand-in (in progress).
