//! huawei provider (in progress).
