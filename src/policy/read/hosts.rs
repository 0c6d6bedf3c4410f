//! `[[host_estimator]]`: the hosts' own image estimators, checked across
//! their fields (a registered family, one entry per host, family, op and
//! backend, a score term with its backends).

use super::Place;
use crate::exact::Ratio;
use crate::policy::document::{ElementRule, HostEstimatorEntry};
use crate::policy::hosts::HostEstimator;
use crate::policy::values::At;
use crate::registry::Registry;
use anyhow::{bail, Result};
use std::collections::BTreeSet;

impl Place<'_> {
    pub(super) fn host_estimators(
        &self,
        entries: Option<Vec<At<HostEstimatorEntry>>>,
        registry: &Registry,
    ) -> Result<Vec<HostEstimator>> {
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for (i, At { span, value: e }) in entries.unwrap_or_default().into_iter().enumerate() {
            let field = format!("host_estimator[{}]", i + 1);
            if !registry.0.contains_key(e.vae.0.as_str()) {
                bail!(self.err(&span, &field, format!("vae: '{}' is not a registered family", e.vae.0)));
            }
            let key = (e.host.0.clone(), e.vae.0.clone(), e.op, e.conv_backend);
            if !seen.insert(key) {
                let on = e.conv_backend.map_or("every other backend".to_string(), |b| b.to_string());
                let what = format!("{} {} {} on {on} is declared twice", e.host.0, e.vae.0, e.op);
                bail!(self.err(&span, &field, what));
            }
            let score_on = e.score_on.unwrap_or_default();
            if e.score_bytes.is_some() == score_on.is_empty() {
                bail!(self.err(&span, &field, "score_bytes and score_on go together: the term and where it applies"));
            }
            out.push(HostEstimator {
                host: e.host.0,
                version: e.version.0,
                vae: e.vae.0,
                op: e.op,
                conv_backend: e.conv_backend,
                per_element: e.per_element.0,
                element: e.element.unwrap_or(ElementRule::Dtype),
                tile_factor: e.tile_factor.map(|d| d.0),
                tile_copies: e.tile_copies.map_or(Ratio::zero(), |d| d.0),
                fp32_extra_mib: e.fp32_extra_mib.map_or(0, |c| c.0),
                batch: e.batch.unwrap_or(false),
                score_bytes: e.score_bytes.map(|d| d.0),
                score_on,
                source: e.source.0,
            });
        }
        Ok(out)
    }
}

impl Place<'_> {
    /// `[[first_use]]`: one entry per platform.
    pub(super) fn first_use(
        &self,
        entries: Option<Vec<At<crate::policy::document::FirstUseEntry>>>,
    ) -> Result<Vec<crate::policy::DeclaredFirstUse>> {
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for (i, At { span, value: e }) in entries.unwrap_or_default().into_iter().enumerate() {
            let os = e.os.unwrap_or(crate::vocab::Os::Any);
            if !seen.insert((e.conv_backend, e.allocator, os)) {
                let what = format!("{} {} {os} is declared twice", e.conv_backend, e.allocator);
                bail!(self.err(&span, &format!("first_use[{}]", i + 1), what));
            }
            out.push(crate::policy::DeclaredFirstUse {
                conv_backend: e.conv_backend,
                allocator: e.allocator,
                os,
                mib: e.mib.0,
                source: e.source.0,
            });
        }
        Ok(out)
    }
}
