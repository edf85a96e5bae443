//! The node's unit tests: composition on one node and on a few nodes wired by the in-test
//! pump of [`net`], with frames built by [`frames`].

use super::*;

mod bad_input;
mod bus;
mod frames;
mod net;
mod ordering;
mod prop_node;
mod registry_client;
mod relay_refusal;
mod routes;
mod status;
