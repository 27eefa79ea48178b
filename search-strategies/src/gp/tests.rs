//! Unit tests of the Gaussian process: interpolation, hyperparameter fit, likelihood
//! gradients against finite differences, and the overlap kernel.

use super::*;

#[test]
fn interpolates_training_points() {
    let x: Vec<f64> = (0..10).map(|i| i as f64 / 9.0).collect();
    let y: Vec<f64> = x.iter().map(|v| (6.0 * v).sin()).collect();
    let g = Gp::fit(&x, 1, &y, Hyper::isotropic(1, 0.3, 1e-6)).unwrap();
    let mut s = Vec::new();
    for i in 0..10 {
        let (m, v) = g.predict(&x[i..i + 1], &mut s);
        assert!((m - y[i]).abs() < 1e-3, "{m} vs {}", y[i]);
        assert!(v < 1e-3);
    }
    let (_, v) = g.predict(&[3.0], &mut s);
    assert!(v > 0.9, "far away the prior variance returns");
}

#[test]
fn hyper_fit_improves_likelihood() {
    // Two features; only the first matters: ARD should lengthen the second scale.
    let mut x = Vec::new();
    let mut y = Vec::new();
    for i in 0..6 {
        for j in 0..6 {
            let (a, b) = (i as f64 / 5.0, j as f64 / 5.0);
            x.extend([a, b]);
            y.push((4.0 * a).sin());
        }
    }
    let start = Hyper::isotropic(2, 0.2, 0.1);
    let before = Gp::fit(&x, 2, &y, start.clone()).unwrap().nll();
    let h = fit_hyper(&x, 2, &y, &start, 60);
    let after = Gp::fit(&x, 2, &y, h.clone()).unwrap().nll();
    assert!(after < before, "{after} !< {before}");
    assert!(h.lengthscales[1] > 2.0 * h.lengthscales[0], "{h:?}");
}

#[test]
fn gradient_matches_finite_differences() {
    let x: Vec<f64> = (0..24)
        .flat_map(|i| [(i % 5) as f64 / 4.0, (i / 5) as f64 / 4.0])
        .collect();
    let y: Vec<f64> = (0..24).map(|i| ((i * 7 % 11) as f64 - 5.0) / 3.0).collect();
    let (evals, best) = (Cell::new(0), RefCell::new(None));
    let lik = Likelihood::new(&x, 2, false, &y, &evals, &best);
    let p = vec![-1.0, -0.5, -3.0];
    assert_gradient_matches(&lik, &p);
}

#[test]
fn ei_and_cdf_are_sane() {
    assert!((norm_cdf(0.0) - 0.5).abs() < 1e-7);
    assert!((norm_cdf(1.96) - 0.975).abs() < 1e-3);
    assert!(expected_improvement(0.0, 1.0, 0.0, 0.0) > 0.39);
    assert!(expected_improvement(5.0, 1e-20, 0.0, 0.0) == 0.0);
}

/// The analytic gradient of the negative log marginal likelihood at `p` equals central finite
/// differences, coordinate by coordinate.
fn assert_gradient_matches(lik: &Likelihood<'_>, p: &[f64]) {
    let (_, g) = lik.value_and_gradient(p);
    assert_eq!(g.len(), p.len());
    for j in 0..p.len() {
        let mut a = p.to_vec();
        let mut b = p.to_vec();
        a[j] += 1e-5;
        b[j] -= 1e-5;
        let fd = (lik.value_and_gradient(&a).0 - lik.value_and_gradient(&b).0) / 2e-5;
        assert!(
            (fd - g[j]).abs() < 1e-3 * (1.0 + fd.abs()),
            "{j}: {fd} vs {}",
            g[j]
        );
    }
}

/// A grid on three features with repeated values, so the overlap term sees matches.
fn grid() -> (Vec<f64>, Vec<f64>) {
    let x: Vec<f64> = (0..30)
        .flat_map(|i| {
            [
                (i % 4) as f64 / 3.0,
                (i / 4 % 3) as f64 / 2.0,
                (i * 7 % 5) as f64 / 4.0,
            ]
        })
        .collect();
    let y: Vec<f64> = (0..30).map(|i| ((i * 7 % 11) as f64 - 5.0) / 3.0).collect();
    (x, y)
}

#[test]
fn overlap_gradient_matches_finite_differences() {
    let (x, y) = grid();
    let (evals, best) = (Cell::new(0), RefCell::new(None));
    let lik = Likelihood::new(&x, 3, true, &y, &evals, &best);
    // log l (3), log noise, log θ (3), log w.
    let p = vec![-1.0, -0.5, 0.3, -3.0, 0.2, -0.7, 1.1, -1.0];
    assert_gradient_matches(&lik, &p);
}

#[test]
fn overlap_kernel_is_positive_definite_and_unit_diagonal() {
    let (x, _) = grid();
    let n = 30;
    for (theta, w) in [(0.02, 0.9), (1.0, 0.3), (20.0, 1.0)] {
        let h = Hyper::with_overlap(3, 0.3, 0.0, theta, w);
        let kern = Kernel::new(&h);
        let mut k = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                k[i * n + j] = kern.eval(&x[i * 3..i * 3 + 3], &x[j * 3..j * 3 + 3]);
            }
            assert!((k[i * n + i] - 1.0).abs() < 1e-12);
        }
        // Noise-free, no jitter: the Cholesky succeeds only on a positive definite matrix.
        assert!(cholesky(&mut k, n), "θ {theta}, w {w}");
    }
}

#[test]
fn the_one_pass_kernel_is_the_two_pass_formula() {
    let (x, _) = grid();
    let h = Hyper {
        overlap: vec![0.3, 2.0, 7.5],
        ..Hyper::with_overlap(3, 0.4, 0.0, 1.0, 0.35)
    };
    let kern = Kernel::new(&h);
    for i in 0..30 {
        for j in 0..30 {
            let (a, b) = (&x[i * 3..i * 3 + 3], &x[j * 3..j * 3 + 3]);
            let want = 0.65 * matern52(scaled_dist(a, b, &kern.inv_l))
                + 0.35 * (-kern.mismatch(a, b)).exp();
            assert!((kern.eval(a, b) - want).abs() < 1e-14, "{i} {j}");
        }
    }
}

#[test]
fn overlap_term_models_single_value_effects() {
    // One feature with 9 values; values 2 and 6 (a comb, far apart in rank) are good. With the
    // overlap term the fit predicts an unseen repeat of a good value as good; the rank kernel
    // alone sees only a wiggle.
    let vals: Vec<usize> = (0..27).map(|i| i % 9).collect();
    let x: Vec<f64> = vals.iter().map(|&v| v as f64 / 8.0).collect();
    let y: Vec<f64> = vals
        .iter()
        .enumerate()
        .map(|(i, &v)| if v == 2 || v == 6 { -2.0 } else { 0.5 } + 0.01 * (i % 3) as f64)
        .collect();
    let with = fit_hyper(&x, 1, &y, &Hyper::with_overlap(1, 0.5, 1e-3, 1.0, 0.3), 60);
    let without = fit_hyper(&x, 1, &y, &Hyper::isotropic(1, 0.5, 1e-3), 60);
    let nll = |h: &Hyper| Gp::fit(&x, 1, &y, h.clone()).unwrap().nll();
    assert!(nll(&with) < nll(&without), "{with:?} vs {without:?}");
    assert!(with.overlap_weight > 0.3, "{with:?}");
}

#[test]
fn a_kept_kernel_row_predicts_as_the_point_itself() {
    // A GP on the first 20 grid points, then one on all 30 (20 plus 10 appended, as a batch's
    // pending picks are): a row computed for the first and extended for the second gives the
    // second's mean and variance exactly.
    let (x, y) = grid();
    let h = Hyper::with_overlap(3, 0.4, 1e-3, 1.0, 0.3);
    let small = Gp::fit(&x[..60], 3, &y[..20], h.clone()).unwrap();
    let large = Gp::fit(&x, 3, &y, h).unwrap();
    let mut scratch = Vec::new();
    for q in [[0.1, 0.5, 0.9], [1.0, 0.0, 0.25], [2.0 / 3.0, 0.5, 0.75]] {
        let mut row = Vec::new();
        small.extend_row(&q, &mut row);
        assert_eq!(row.len(), 20);
        assert_eq!(small.mean_from_row(&row), small.mean(&q));
        assert_eq!(
            small.predict_from_row(&row, &mut scratch),
            small.predict(&q, &mut scratch)
        );
        large.extend_row(&q, &mut row);
        assert_eq!(row.len(), 30);
        assert_eq!(large.mean_from_row(&row), large.mean(&q));
        let (mu, v) = large.predict_from_row(&row, &mut scratch);
        assert_eq!((mu, v), large.predict(&q, &mut scratch));
        // And the prediction is a real one: not the small GP's.
        assert_ne!(mu, small.mean(&q));
    }
}
