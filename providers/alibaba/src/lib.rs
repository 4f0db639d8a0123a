//! alibaba provider (in progress).
