//! The plot: an SVG drawn with plotters.

use std::path::Path;

use serde_json::Value;

use super::measure::read_targets;
use super::SAMPLES;

/// Two charts in one SVG: each read's time (ms) against the size, and the commit rates.
pub(super) fn plot(path: &Path, backend: &str, answer: &Value) -> anyhow::Result<()> {
    use plotters::prelude::*;
    let rows = answer["rows"].as_array().cloned().unwrap_or_default();
    let sizes: Vec<f64> = rows.iter().filter_map(|r| r["executions"].as_f64()).collect();
    let (lo, hi) = (
        sizes.first().copied().unwrap_or(1.0) / 2.0,
        sizes.last().copied().unwrap_or(10.0) * 2.0,
    );
    let root = SVGBackend::new(path, (1100, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(draw)?;
    let (left, right) = root.split_horizontally(640);
    let reads: Vec<&str> = read_targets("")
        .into_iter()
        .map(|(n, _)| n)
        .chain(["relay_claim_ack_100_ms", "sweep_100_ms"])
        .collect();
    let max_ms = rows
        .iter()
        .flat_map(|r| reads.iter().filter_map(move |k| r[*k].as_f64()))
        .fold(1.0f64, f64::max);
    let mut chart = ChartBuilder::on(&left)
        .caption(
            format!("{backend}: monitor reads (ms, median of {SAMPLES})"),
            ("sans-serif", 16),
        )
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(50)
        .build_cartesian_2d((lo..hi).log_scale(), (0.001f64..max_ms * 2.0).log_scale())
        .map_err(draw)?;
    chart
        .configure_mesh()
        .x_desc("executions")
        .y_desc("ms")
        .draw()
        .map_err(draw)?;
    for (n, key) in reads.iter().enumerate() {
        let color = Palette99::pick(n).to_rgba();
        let points: Vec<(f64, f64)> = rows
            .iter()
            .filter_map(|r| Some((r["executions"].as_f64()?, r[*key].as_f64()?.max(0.001))))
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
        .label_font(("sans-serif", 10))
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(draw)?;
    let rates = [
        "commit_1_writer_per_s",
        "commit_16_clients_per_s",
        "fill_executions_per_s",
    ];
    let max_rate = rows
        .iter()
        .flat_map(|r| rates.iter().filter_map(move |k| r[*k].as_f64()))
        .fold(1.0f64, f64::max);
    let mut chart = ChartBuilder::on(&right)
        .caption(format!("{backend}: commits per second"), ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(60)
        .build_cartesian_2d((lo..hi).log_scale(), 0f64..max_rate * 1.2)
        .map_err(draw)?;
    chart.configure_mesh().x_desc("executions").draw().map_err(draw)?;
    for (n, key) in rates.iter().enumerate() {
        let color = Palette99::pick(n + 3).to_rgba();
        let points: Vec<(f64, f64)> = rows
            .iter()
            .filter_map(|r| Some((r["executions"].as_f64()?, r[*key].as_f64()?)))
            .collect();
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))
            .map_err(draw)?
            .label(*key)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 15, y)], color));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerLeft)
        .label_font(("sans-serif", 10))
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
