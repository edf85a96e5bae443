//! The embedded registry client machine (in progress).
