//! The plots of the scale benches (`bench_scale` and `bench_scale_log`): two charts in one
//! SVG drawn with plotters, the reads' times (ms, a log scale) and the write rates, each
//! against the store's size.

use std::path::Path;

use serde_json::Value;

use super::measure::read_targets;
use super::SAMPLES;

/// One chart of a [`Plot`]: which figures of each row it draws.
pub(crate) struct Chart {
    /// The chart's title.
    pub caption: String,
    /// The figures drawn, one line each (a `_ms` ending is left out of its label).
    pub keys: Vec<String>,
    /// The first colour of Palette99 it takes.
    pub first_colour: usize,
    /// The label font's size.
    pub label_size: u32,
}

/// Two charts side by side, against the size each row names under `x_key`.
pub(crate) struct Plot<'a> {
    /// The row's figure that is the size (`executions`, `envelopes`).
    pub x_key: &'a str,
    /// The x axis's description on the left.
    pub x_desc: &'a str,
    /// The picture's width and height.
    pub size: (u32, u32),
    /// Where the left chart ends.
    pub split: u32,
    /// The read times (ms): a log scale from `floor_ms`.
    pub reads: Chart,
    /// The smallest time drawn (a log scale has no zero).
    pub floor_ms: f64,
    /// The least top of the time scale (a budget drawn must be in sight).
    pub min_top_ms: f64,
    /// A budget drawn as a red line across the reads, if any.
    pub budget_ms: Option<f64>,
    /// The rates (per second): a linear scale from zero.
    pub rates: Chart,
}

/// The executions' curve: each monitor read's time (ms) against the size, and the commit rates.
pub(super) fn plot(path: &Path, backend: &str, answer: &Value) -> anyhow::Result<()> {
    let reads = read_targets("")
        .into_iter()
        .map(|(n, _)| n.to_owned())
        .chain(["relay_claim_ack_100_ms".into(), "sweep_100_ms".into()])
        .collect();
    let rates = [
        "commit_1_writer_per_s",
        "commit_16_clients_per_s",
        "fill_executions_per_s",
    ];
    draw_plot(
        path,
        &Plot {
            x_key: "executions",
            x_desc: "executions",
            size: (1100, 520),
            split: 640,
            reads: Chart {
                caption: format!("{backend}: monitor reads (ms, median of {SAMPLES})"),
                keys: reads,
                first_colour: 0,
                label_size: 10,
            },
            floor_ms: 0.001,
            min_top_ms: 1.0,
            budget_ms: None,
            rates: Chart {
                caption: format!("{backend}: commits per second"),
                keys: rates.iter().map(|k| k.to_string()).collect(),
                first_colour: 3,
                label_size: 10,
            },
        },
        answer,
    )
}

/// Draws `plot` of `answer`'s rows into the SVG at `path`.
pub(crate) fn draw_plot(path: &Path, plot: &Plot<'_>, answer: &Value) -> anyhow::Result<()> {
    use plotters::prelude::*;
    let rows = answer["rows"].as_array().cloned().unwrap_or_default();
    let x_of = |r: &Value| r[plot.x_key].as_f64();
    let sizes: Vec<f64> = rows.iter().filter_map(x_of).collect();
    let (lo, hi) = (
        sizes.first().copied().unwrap_or(1.0) / 2.0,
        sizes.last().copied().unwrap_or(10.0) * 2.0,
    );
    let root = SVGBackend::new(path, plot.size).into_drawing_area();
    root.fill(&WHITE).map_err(draw)?;
    let (left, right) = root.split_horizontally(plot.split);
    let figure = |r: &Value, k: &str| r[k].as_f64();
    let top = |keys: &[String], least: f64| {
        rows.iter()
            .flat_map(|r| keys.iter().filter_map(move |k| figure(r, k)))
            .fold(least, f64::max)
    };
    let max_ms = top(&plot.reads.keys, plot.min_top_ms);
    let mut chart = ChartBuilder::on(&left)
        .caption(&plot.reads.caption, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(50)
        .build_cartesian_2d((lo..hi).log_scale(), (plot.floor_ms..max_ms * 2.0).log_scale())
        .map_err(draw)?;
    chart
        .configure_mesh()
        .x_desc(plot.x_desc)
        .y_desc("ms")
        .draw()
        .map_err(draw)?;
    if let Some(budget) = plot.budget_ms {
        chart
            .draw_series(LineSeries::new(
                vec![(lo, budget), (hi, budget)],
                RED.stroke_width(1),
            ))
            .map_err(draw)?
            .label(format!("{budget} ms budget"))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], RED));
    }
    for (n, key) in plot.reads.keys.iter().enumerate() {
        let color = Palette99::pick(plot.reads.first_colour + n).to_rgba();
        let points: Vec<(f64, f64)> = rows
            .iter()
            .filter_map(|r| Some((x_of(r)?, figure(r, key)?.max(plot.floor_ms))))
            .collect();
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))
            .map_err(draw)?
            .label(key.trim_end_matches("_ms").to_owned())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], color));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font(("sans-serif", plot.reads.label_size))
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(draw)?;
    let max_rate = top(&plot.rates.keys, 1.0);
    let mut chart = ChartBuilder::on(&right)
        .caption(&plot.rates.caption, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(60)
        .build_cartesian_2d((lo..hi).log_scale(), 0f64..max_rate * 1.2)
        .map_err(draw)?;
    chart.configure_mesh().x_desc(plot.x_key).draw().map_err(draw)?;
    for (n, key) in plot.rates.keys.iter().enumerate() {
        let color = Palette99::pick(plot.rates.first_colour + n).to_rgba();
        let points: Vec<(f64, f64)> = rows
            .iter()
            .filter_map(|r| Some((x_of(r)?, figure(r, key)?)))
            .collect();
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))
            .map_err(draw)?
            .label(key.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], color));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerLeft)
        .label_font(("sans-serif", plot.rates.label_size))
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(draw)?;
    root.present().map_err(draw)?;
    Ok(())
}

fn draw<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow::anyhow!("cannot draw the plot: {e}")
}
