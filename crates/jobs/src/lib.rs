//! tunebank's jobs over the key, the bank, the models and the runners: the job API every front end
//! calls ([`job`]), the OPAT, SGAT and GDAT tuners and their shared plumbing ([`tune`]), the
//! PostgreSQL tuning queue ([`queue`]) and the bank inspector's answers ([`inspect`]).
#![deny(missing_docs)]
#![warn(unnameable_types)]

pub mod classify;
pub mod inspect;
pub mod job;
pub mod queue;
pub mod tune;
