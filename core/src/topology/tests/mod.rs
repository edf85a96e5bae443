//! Tests of the topology registry, relations and policy.
