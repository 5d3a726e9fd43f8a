//! Renders the whole BFCL corpus (tests/data/bfcl/functions.jsonl, imported once)
//! for every target; throughput is in tools, so criterion reports tools/s.
//!
//! Run with `cargo bench -p toolgate-core --bench render_corpus`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use toolgate_core::wire::{self, ImportFormat, RenderOptions, Target};
use toolgate_core::{ToolDescriptor, ToolSource};

const CORPUS: &str = include_str!("../../../tests/data/bfcl/functions.jsonl");

fn descriptors() -> Vec<ToolDescriptor> {
    let imported = wire::import_tools(ImportFormat::Bfcl, CORPUS).expect("the corpus imports");
    imported
        .tools
        .iter()
        .map(|spec| {
            let mut d = ToolDescriptor::new(
                spec.name.clone(),
                spec.description.clone(),
                spec.input_schema(),
                spec.effect(),
                ToolSource::Spec {
                    file: "functions.jsonl".into(),
                },
            );
            d.output_schema = spec.returns.clone();
            d
        })
        .collect()
}

fn render_corpus(c: &mut Criterion) {
    let tools = descriptors();
    let mut group = c.benchmark_group("render_corpus");
    group.throughput(Throughput::Elements(tools.len() as u64));
    for target in Target::ALL {
        group.bench_function(target.as_str(), |b| {
            b.iter(|| wire::render(target, black_box(&tools), &[], RenderOptions::default()))
        });
    }
    group.finish();
}

fn import_corpus(c: &mut Criterion) {
    let count = CORPUS.lines().filter(|l| !l.trim().is_empty()).count();
    let mut group = c.benchmark_group("import_corpus");
    group.throughput(Throughput::Elements(count as u64));
    group.bench_function("bfcl", |b| {
        b.iter(|| wire::import_tools(ImportFormat::Bfcl, black_box(CORPUS)))
    });
    group.finish();
}

criterion_group!(benches, render_corpus, import_corpus);
criterion_main!(benches);
