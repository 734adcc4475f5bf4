//! Labels at the ends of a chart's lines, moved apart where they would
//! overlap. Each label wants the height of its line's last point; labels
//! that crowd are gathered into a run `gap` apart, placed as near as it can
//! be to where its labels want to be (the least-squares place: the mean of
//! each want less its offset in the run), and a run that then touches the
//! one above merges with it, until none overlap (the way direct-labelling
//! tools such as R's `directlabels` settle crowded labels).

/// Heights (in pixels, down) for labels that want `wanted`, at least `gap`
/// apart, in the input order; within `[top, bottom]` when they fit there,
/// else from `top` down past `bottom` (the chart grows to hold them).
pub fn spread(wanted: &[f64], gap: f64, top: f64, bottom: f64) -> Vec<f64> {
    let mut order: Vec<usize> = (0..wanted.len()).collect();
    order.sort_by(|&a, &b| wanted[a].total_cmp(&wanted[b]));
    // Each run: its first label's place in `order`, its length, and the sum
    // over its labels of (want - offset in the run), whose mean is where
    // the run's first label goes.
    struct Run {
        first: usize,
        len: usize,
        sum: f64,
    }
    let place = |run: &Run| -> f64 {
        let lowest_start = bottom - gap * (run.len - 1) as f64;
        (run.sum / run.len as f64).min(lowest_start).max(top)
    };
    let mut runs: Vec<Run> = Vec::new();
    for (k, &i) in order.iter().enumerate() {
        runs.push(Run { first: k, len: 1, sum: wanted[i] });
        while runs.len() >= 2 {
            let (above, below) = (&runs[runs.len() - 2], &runs[runs.len() - 1]);
            if place(above) + gap * above.len as f64 <= place(below) + 1e-9 {
                break;
            }
            let below = runs.pop().expect("two runs");
            let above = runs.last_mut().expect("two runs");
            above.sum += below.sum - gap * (above.len * below.len) as f64;
            above.len += below.len;
        }
    }
    let mut out = vec![0.0; wanted.len()];
    for run in &runs {
        let start = place(run);
        for j in 0..run.len {
            out[order[run.first + j]] = start + gap * j as f64;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::spread;

    #[test]
    fn labels_far_apart_stay_where_they_want() {
        assert_eq!(spread(&[100.0, 10.0, 50.0], 12.0, 0.0, 200.0), vec![100.0, 10.0, 50.0]);
    }

    #[test]
    fn crowded_labels_are_nudged_apart_around_their_wants() {
        let got = spread(&[50.0, 50.0, 51.0, 200.0], 12.0, 0.0, 300.0);
        let mut sorted = got.clone();
        sorted.sort_by(f64::total_cmp);
        for pair in sorted.windows(2) {
            assert!(pair[1] - pair[0] >= 12.0 - 1e-9, "{got:?}");
        }
        // The run of three is centred on its wants, not pushed down.
        assert!((got[0] + got[1] + got[2]) / 3.0 - 50.3 < 12.0, "{got:?}");
        assert_eq!(got[3], 200.0);
    }

    #[test]
    fn labels_keep_inside_the_bounds_when_they_fit_and_grow_past_when_not() {
        let got = spread(&[195.0, 199.0], 12.0, 0.0, 200.0);
        assert!(got.iter().all(|&y| y <= 200.0) && (got[1] - got[0]).abs() >= 12.0, "{got:?}");
        let many = spread(&[5.0; 30], 12.0, 0.0, 100.0);
        assert_eq!(many.iter().copied().fold(f64::INFINITY, f64::min), 0.0);
        assert!(many.iter().copied().fold(0.0, f64::max) > 100.0, "too many to fit: they grow down");
    }
}
