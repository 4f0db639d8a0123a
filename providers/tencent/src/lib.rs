//! tencent provider (in progress).
