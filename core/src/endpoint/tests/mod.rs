//! Endpoint tests.
