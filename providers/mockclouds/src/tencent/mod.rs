//! tencent API stand-in (in progress).
