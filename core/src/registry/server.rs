//! The embedded registry server machine (in progress).
