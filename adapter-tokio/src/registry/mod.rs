//! Registries: the embedded registry server ([`server`]), the embedded registry client
//! backend ([`client`]), and the [`feed`] contract every backend speaks to the node driver.

pub mod client;
pub mod etcd_options;
pub mod feed;
pub mod server;

pub use etcd_options::EtcdOptions;
pub use feed::{Feed, FeedCommand, FeedEvent, FeedPort, Registration, feed_channel};
pub use server::{
    ConnectionCaps, RegistryHandle, spawn_registry, spawn_registry_capped, spawn_registry_with,
};
