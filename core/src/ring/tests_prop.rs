//! Property tests of rings.
