//! External runner (stub).
#![allow(missing_docs)]
use super::*;
pub struct ExecRunner;
impl ExecRunner {
    pub fn new(_c: &str) -> Result<Self, MeasureError> {
        Ok(ExecRunner)
    }
}
impl Measure for ExecRunner {
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
