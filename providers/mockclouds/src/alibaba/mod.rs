//! alibaba API stand-in (in progress).
