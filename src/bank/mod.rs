//! Records, storage backends, layered look-ups and bank paths. Only this module touches storage.

pub mod record;
pub mod store;
pub mod verify;
