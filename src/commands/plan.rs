//! `vramfit plan`: will the work fit, and how should it run?

use super::reserve::{load, CoefficientSource};
use crate::plan::{self, Budget, Canvas, Plan};
use crate::pricing::platform::EnvSnapshot;
use crate::pricing::Query;
use anyhow::Result;

/// The work to plan.
#[derive(Debug, Clone)]
pub enum Workload {
    /// A VAE query; its batch is the number of items.
    Vae(Query, CoefficientSource),
    /// A frame canvas.
    Canvas(Canvas),
}

pub fn run(w: &Workload, b: &Budget, env: &EnvSnapshot) -> Result<Plan> {
    match w {
        Workload::Vae(q, source) => {
            let c = load(source)?;
            let tiles = c.file.tiles.clone();
            plan::vae(&c, q, env, b, &tiles)
        }
        Workload::Canvas(c) => plan::canvas(c, b),
    }
}
