//! External runner (stub).
#![allow(missing_docs)]
use crate::measure::*;
pub struct CpuRunner;
impl CpuRunner {
    pub fn new() -> Self {
        CpuRunner
    }
}
impl Measure for CpuRunner {
    fn identity(&self) -> String {
        todo!()
    }
    fn space(&mut self, _t: &TuningTask) -> Result<TaskSpace, MeasureError> {
        todo!()
    }
    fn default_strategy(&mut self, _t: &TuningTask) -> Result<StrategyMap, MeasureError> {
        todo!()
    }
    fn measure(
        &mut self,
        _t: &TuningTask,
        _c: &[StrategyMap],
    ) -> Result<Vec<Outcome>, MeasureError> {
        todo!()
    }
}
