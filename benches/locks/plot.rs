//! `target/bench/benchmarks-pairs.svg` (or `BENCH_PLOT`, e.g. `docs/benchmarks-pairs.svg`
//! to update the docs' copy): RLock pairs/s against the number of tasks, one name per task and all tasks on one name, with the server's pipelined
//! `EVALSHA / 2` as a dashed line.

use crate::Bench;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Draws the plot if a path is set and at least two points were measured.
pub fn draw(bench: &Bench) {
    let Some(path) = &bench.settings.plot else {
        return;
    };
    let rate = |name: &str| bench.row(name).and_then(|r| r.ops_per_s);
    let distinct: Vec<(f64, f64)> = [
        ("uncontended_1", 1.0),
        ("distinct_16", 16.0),
        ("distinct_64", 64.0),
        ("distinct_1024", 1024.0),
    ]
    .iter()
    .filter_map(|(n, x)| rate(n).map(|y| (*x, y)))
    .collect();
    let contended: Vec<(f64, f64)> = [("contended_4", 4.0), ("contended_16", 16.0)]
        .iter()
        .filter_map(|(n, x)| rate(n).map(|y| (*x, y)))
        .collect();
    if distinct.len() + contended.len() >= 2 {
        match plot(path, &distinct, &contended, bench.parallel_limit()) {
            Ok(()) => eprintln!("plot written to {}", path.display()),
            Err(error) => eprintln!("could not draw the plot: {error}"),
        }
    }
}

fn plot(
    path: &std::path::Path,
    distinct: &[(f64, f64)],
    contended: &[(f64, f64)],
    limit: Option<f64>,
) -> Result<(), BoxError> {
    use plotters::prelude::*;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let root = SVGBackend::new(path, (820, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let top = distinct
        .iter()
        .chain(contended)
        .map(|p| p.1)
        .chain(limit)
        .fold(1.0f64, f64::max)
        * 1.15;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "redisson-lock: lock()+unlock() per second vs tasks",
            ("sans-serif", 20),
        )
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(72)
        .build_cartesian_2d((0.7f64..2000f64).log_scale(), 0f64..top)?;
    chart
        .configure_mesh()
        .x_desc("tasks (log scale)")
        .y_desc("pairs / s")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{:.0}k", y / 1000.0))
        .draw()?;
    if let Some(limit) = limit {
        chart
            .draw_series(DashedLineSeries::new(
                vec![(0.7, limit), (2000.0, limit)],
                6,
                4,
                BLACK.stroke_width(1),
            ))?
            .label("server: pipelined EVALSHA / 2")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK));
    }
    let blue = RGBColor(31, 119, 180);
    let red = RGBColor(214, 39, 40);
    chart
        .draw_series(LineSeries::new(
            distinct.iter().copied(),
            blue.stroke_width(2),
        ))?
        .label("one name per task (1 = uncontended_1)")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], blue.stroke_width(2)));
    chart.draw_series(distinct.iter().map(|&p| Circle::new(p, 4, blue.filled())))?;
    chart
        .draw_series(LineSeries::new(
            contended.iter().copied(),
            red.stroke_width(2),
        ))?
        .label("all tasks on one name (acquisitions / s)")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], red.stroke_width(2)));
    chart.draw_series(
        contended
            .iter()
            .map(|&p| TriangleMarker::new(p, 5, red.filled())),
    )?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}
