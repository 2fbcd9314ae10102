//! `lockbench chaos render`: a chaos schedule, or one fault primitive, as another engine's
//! resources ([`crate::chaos_mesh`]), printed to standard output.

use std::collections::BTreeMap;

use anyhow::Context;

use super::{Exit, PrimitiveArg, RenderArgs};
use crate::chaos_mesh::{self, Pods, Primitive, Scope};
use crate::nemesis::schedule::Schedule;

/// Prints the rendered resources; a bad argument or a fault the engine cannot express is an
/// error naming it.
pub fn render(args: RenderArgs) -> anyhow::Result<Exit> {
    let yaml = match (&args.file, args.primitive, &args.pod) {
        (Some(file), _, _) => {
            let schedule = Schedule::from_file(file)?;
            let scope = Scope {
                namespace: args.namespace.clone(),
                pods: Pods::Labelled(labels(&args.selectors)?),
                container: args.container.clone(),
            };
            chaos_mesh::render_schedule(&schedule, &scope)?
        }
        (None, Some(p), Some(pod)) => {
            chaos_mesh::render_primitive(&primitive(p, &args)?, pod, &args.namespace)
        }
        _ => anyhow::bail!("give a chaos schedule FILE, or --primitive with --pod"),
    };
    print!("{yaml}");
    Ok(Exit::Ok)
}

fn labels(selectors: &[String]) -> anyhow::Result<BTreeMap<String, String>> {
    if selectors.is_empty() {
        anyhow::bail!(
            "--selector: give the label of the cluster's pods, e.g. --selector app=etcd (the \
             resources act on every pod it picks)"
        );
    }
    selectors
        .iter()
        .map(|s| {
            s.split_once('=')
                .filter(|(k, _)| !k.is_empty())
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .with_context(|| format!("--selector '{s}': write KEY=VALUE, e.g. app=etcd"))
        })
        .collect()
}

fn primitive(p: PrimitiveArg, args: &RenderArgs) -> anyhow::Result<Primitive> {
    let need = |what: Option<std::time::Duration>, flag: &str, example: &str| {
        what.with_context(|| format!("--primitive {p:?}: give {flag}, e.g. {flag} {example}"))
    };
    Ok(match p {
        PrimitiveArg::Kill => Primitive::Kill {
            container: args.container.clone(),
        },
        PrimitiveArg::Pause => Primitive::Pause,
        PrimitiveArg::Isolate => {
            if args.peers.is_empty() {
                anyhow::bail!(
                    "--primitive isolate: give --peers, the pods it is cut from (a target \
                     command's {{peers}}), e.g. --peers etcd-1,etcd-2"
                );
            }
            Primitive::Isolate {
                peers: args.peers.clone(),
            }
        }
        PrimitiveArg::Slow => Primitive::Slow {
            latency: need(args.latency, "--latency", "20ms")?,
            jitter: args.jitter.unwrap_or_default(),
        },
        PrimitiveArg::Clock => Primitive::Clock {
            offset: need(args.offset, "--offset", "30s")?,
            back: args.back,
        },
    })
}
