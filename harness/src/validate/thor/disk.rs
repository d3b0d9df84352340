//! The Thor templates are compiled into the binary (`include_str!`), and
//! `check_templates` checks that built-in copy. A file on disk that differs
//! from it (an edit not yet built, or a checkout the binary was not built
//! from) is checked itself, in place of the built-in one, with the same
//! checks: an unknown field on disk is not waved through because the
//! built-in copy is fine.

use crate::schema::Finding;
use crate::validate::thor::matrix::check_template_set;
use crate::validate::thor::setup::{check_eclccserver_rbac, check_rbac_template, check_setup_of};
use crate::workload::thor::template as tpl;
use crate::workload::thor::{Mode, Template};

/// The instance template sets: (mode, Kubernetes minor).
fn instance_sets() -> Vec<(Mode, Vec<Template>)> {
    [(Mode::Baseline, 37), (Mode::Jobset, 37)]
        .into_iter()
        .chain(tpl::GANG_MINORS.iter().map(|m| (Mode::JobsetGang, *m)))
        .map(|(mode, minor)| (mode, tpl::templates_for(mode, minor)))
        .collect()
}

/// Every template built into the binary.
fn built_in() -> Vec<Template> {
    let mut all: Vec<Template> = instance_sets().into_iter().flat_map(|(_, t)| t).collect();
    all.extend(Mode::ALL.into_iter().map(tpl::rbac));
    all.extend(tpl::setup());
    all.push(tpl::compile_job());
    all.push(tpl::eclccserver_rbac());
    all
}

/// How a file under manifests/hpcc/ relates to the binary's copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Copy {
    /// Not one of the built-in templates.
    NotBuiltIn,
    /// The same text as the built-in copy (which `check_templates` checks).
    Same,
    /// It differs: the findings of checking the file on disk.
    Differs(Vec<Finding>),
}

/// Check the on-disk text of `rel` (a path relative to the repository)
/// when it differs from the built-in copy.
pub fn check_on_disk(rel: &str, text: &str) -> Copy {
    let Some(builtin) = built_in().into_iter().find(|t| t.path == rel) else {
        return Copy::NotBuiltIn;
    };
    if builtin.text == text {
        return Copy::Same;
    }
    // Templates hold 'static text; this happens once per differing file
    // in a `validate` run.
    let disk: &'static str = Box::leak(text.to_string().into_boxed_str());
    let swap = |t: Template| {
        if t.path == rel {
            Template { text: disk, ..t }
        } else {
            t
        }
    };
    let mut out = Vec::new();
    for (mode, set) in instance_sets() {
        if set.iter().any(|t| t.path == rel) {
            let set: Vec<(Mode, Template)> = set.into_iter().map(|t| (mode, swap(t))).collect();
            out.extend(check_template_set(&set).findings);
        }
    }
    for mode in Mode::ALL {
        if tpl::rbac(mode).path == rel {
            out.extend(check_rbac_template(mode, &swap(tpl::rbac(mode))));
        }
    }
    if tpl::eclccserver_rbac().path == rel {
        out.extend(check_eclccserver_rbac(&swap(tpl::eclccserver_rbac())));
    }
    let setup = tpl::setup();
    if setup.iter().any(|t| t.path == rel) || tpl::compile_job().path == rel {
        let setup: Vec<Template> = setup.into_iter().map(swap).collect();
        out.extend(check_setup_of(&setup, swap(tpl::compile_job())).findings);
    }
    out.retain(|f| f.file == rel);
    out.sort();
    out.dedup();
    Copy::Differs(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_differing_copy_on_disk_is_checked_itself() {
        let rbac = tpl::rbac(Mode::Baseline);
        assert_eq!(check_on_disk(rbac.path, rbac.text), Copy::Same);
        assert_eq!(check_on_disk("manifests/x.yaml", ""), Copy::NotBuiltIn);
        let typo = rbac.text.replacen("\nrules:", "\nrulez:", 1);
        let Copy::Differs(f) = check_on_disk(rbac.path, &typo) else {
            panic!("not checked")
        };
        assert!(f.iter().any(|f| f.message.contains("rulez")), "{f:#?}");
        let job = tpl::templates_for(Mode::Baseline, 37)[1];
        let typo = job.text.replacen("\nspec:", "\nspek:", 1);
        let Copy::Differs(f) = check_on_disk(job.path, &typo) else {
            panic!("not checked")
        };
        assert!(f.iter().any(|f| f.message.contains("spek")), "{f:#?}");
    }
}
