//! Theta sketches for the Puffin blob type `apache-datasketches-theta-v1`: distinct-value
//! counts of a column, built the way Iceberg Java builds them (lgK 12, seed 9001, each value fed
//! as its single-value binary serialisation) and serialised in Java's compact form.

mod feed;
mod hash;
mod theta;

pub use feed::update_from_array;
pub use hash::{theta_hash, SEED};
pub use theta::{estimate_of, ThetaSketch, K, SEED_HASH};

#[cfg(test)]
mod tests;
