//! Configurations with extreme values (0, 1, the ends of each range, u64::MAX, huge
//! floats, NaN, infinities): validation either refuses them with a keyed error or gives a
//! configuration whose derived numbers are sane and monotonic. Tests build with overflow
//! checks (Cargo.toml, profile.dev), so any wrapping arithmetic on the way panics here.

use proptest::prelude::*;
use rocelab::config::endpoint::{DcqcnConfig, EndpointConfig};
use rocelab::config::{
    ConfigFile, MAX_BUFFER_BYTES, PgSpec, PortConfig, QueueLimit, RedSpec, SwitchConfig,
    ThresholdMode, XoffRule, min_headroom_bytes,
};
use rocelab::endpoint::dcqcn::ReactionPoint;
use rocelab::switch::mmu::Mmu;
use rocelab::time::Nanos;

const MINIMAL: &str =
    "[pfc]\nlossless = [3]\n[classify]\ndscp_to_tc = [[26, 3]]\n[queue.3]\nschedule = \"dwrr\"\n";

/// Integers at and around the ends of every range.
fn extreme_u64() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0),
        Just(1),
        Just(67),
        Just(68),
        Just(65_535),
        Just(65_536),
        Just(500_000),
        Just(500_001),
        Just(3_600_000),
        Just(1_000_000),
        Just(MAX_BUFFER_BYTES),
        Just(MAX_BUFFER_BYTES + 1),
        Just(1 << 62),
        Just(u64::from(u32::MAX)),
        Just(u64::MAX),
        any::<u64>(),
    ]
}

/// Floats at and around the ends of every range, and the non-numbers.
fn extreme_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.0),
        Just(-0.0),
        Just(1e-4),
        Just(0.001),
        Just(1.0 / 256.0),
        Just(1.0 / 128.0),
        Just(1.0),
        Just(8.0),
        Just(64.0),
        Just(1600.0),
        Just(1600.0001),
        Just(100_000.0),
        Just(3.6e9),
        Just(1e300),
        Just(-1.0),
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(f64::MAX),
        Just(f64::MIN_POSITIVE),
        -1e12..1e12f64,
    ]
}

/// One field of the switch configuration set to `u` or `x`.
fn edit_switch(file: &mut ConfigFile, field: usize, u: u64, x: f64) {
    let u32v = u32::try_from(u).unwrap_or(u32::MAX);
    match field {
        0 => file.mac_age_secs = u,
        1 => file.port_defaults.speed_gbps = Some(x),
        2 => file.port_defaults.cable_m = Some(x),
        3 => file.port_defaults.cable_ns = Some(u),
        4 => file.port_defaults.mtu = Some(u32v),
        5 => file.pfc.pause_quanta = u32v,
        6 => file.pfc.refresh_quanta = Some(u32v),
        7 => file.buffer.shared_bytes = u,
        8 => file.buffer.pg_alpha = Some(x),
        9 => file.buffer.queue_alpha = Some(x),
        10 => file.buffer.queue_reserve_bytes = u,
        11 => file.buffer.pg_reserve_bytes = u,
        12 => {
            file.buffer.threshold = ThresholdMode::Static;
            file.buffer.queue_limit_bytes = Some(u);
            file.pg.insert(
                "3".into(),
                PgSpec {
                    xoff_bytes: Some(u),
                    xon_bytes: Some(u / 2),
                    ..PgSpec::default()
                },
            );
        }
        13 => {
            let pg = file.pg.entry("3".into()).or_default();
            pg.reserve_bytes = Some(u);
        }
        14 => {
            let pg = file.pg.entry("3".into()).or_default();
            pg.xon_offset_bytes = Some(u);
        }
        15 => {
            let pg = file.pg.entry("3".into()).or_default();
            pg.headroom_bytes = Some(u);
        }
        16 => {
            file.queue.get_mut("3").unwrap().ecn = Some(RedSpec {
                kmin_bytes: u / 2,
                kmax_bytes: u,
                pmax: x,
                gentle: false,
            })
        }
        17 => file.queue.get_mut("3").unwrap().weight = Some(u32v),
        18 => {
            file.watchdog.enabled = true;
            file.watchdog.detection_ms = u;
        }
        19 => file.watchdog.poll_ms = u,
        _ => file.watchdog.restoration_ms = u,
    }
}

/// The derived numbers of a resolved configuration are within their documented ranges,
/// and computing the MMU's limits from them neither wraps nor panics.
fn check_sane(cfg: &SwitchConfig) {
    assert!(cfg.mac_age >= Nanos::from_secs(1) && cfg.mac_age <= Nanos::from_secs(1_000_000));
    for port in cfg.ports.iter().chain([&cfg.port_defaults]) {
        assert!((1_000_000..=1_600_000_000_000).contains(&port.bits_per_sec));
        assert!(port.cable <= Nanos(500_000));
        assert!((68..=16384).contains(&port.mtu));
        let h = min_headroom_bytes(port);
        assert!(h >= 2 * u64::from(port.mtu) && h < MAX_BUFFER_BYTES, "{h}");
        let longer = PortConfig {
            cable: Nanos(port.cable.0 + 1),
            ..port.clone()
        };
        assert!(min_headroom_bytes(&longer) >= h);
    }
    assert!(cfg.refresh_quanta < cfg.pause_quanta);
    assert!(cfg.shared_bytes >= 1 && cfg.shared_bytes <= MAX_BUFFER_BYTES);
    assert!(cfg.queue_reserve_bytes <= MAX_BUFFER_BYTES);
    for pg in &cfg.pgs {
        assert!(pg.reserve_bytes <= MAX_BUFFER_BYTES);
        match pg.xoff {
            XoffRule::Dynamic {
                alpha,
                xon_offset_bytes,
            } => {
                assert!(!pg.lossless || (1.0 / 128.0..=8.0).contains(&alpha));
                assert!(xon_offset_bytes <= MAX_BUFFER_BYTES);
            }
            XoffRule::Static {
                xoff_bytes,
                xon_bytes,
            } => assert!(xon_bytes < xoff_bytes && xoff_bytes <= cfg.shared_bytes),
        }
    }
    for q in &cfg.queues {
        if let Some(red) = q.ecn {
            assert!(red.kmin_bytes <= red.kmax_bytes && red.kmax_bytes <= MAX_BUFFER_BYTES);
            assert!(red.pmax > 0.0 && red.pmax <= 1.0);
        }
    }
    for t in [
        cfg.watchdog.detection,
        cfg.watchdog.restoration,
        cfg.watchdog.poll,
    ] {
        assert!(t >= Nanos::from_millis(1) && t <= Nanos::from_secs(3600));
    }
    let mut with_port = cfg.clone();
    with_port.ports = vec![cfg.port_defaults.clone()];
    let mmu = Mmu::new(&with_port);
    for pg in 0..8 {
        let xoff = mmu.xoff_threshold(pg);
        assert!(mmu.xon_threshold(pg) <= xoff);
        if cfg.pgs[pg].lossless {
            // Alpha ≤ 8 of at most 1 TiB.
            assert!(xoff <= 8 * MAX_BUFFER_BYTES);
            assert!(mmu.headroom_size(0, pg) < MAX_BUFFER_BYTES + 1);
        }
    }
    assert!(mmu.lossy_queue_limit() <= 10 * MAX_BUFFER_BYTES);
}

/// One field of the endpoint configuration set to `u` or `x`.
fn edit_endpoint(cfg: &mut EndpointConfig, field: usize, u: u64, x: f64) {
    let u32v = u32::try_from(u).unwrap_or(u32::MAX);
    let d = &mut cfg.dcqcn;
    match field {
        0 => cfg.link_gbps = x,
        1 => cfg.rto_us = x,
        2 => cfg.ack_every = u32v,
        3 => cfg.window_packets = u32v,
        4 => d.g = x,
        5 => d.alpha_timer_us = x,
        6 => d.rate_timer_us = x,
        7 => d.byte_counter_bytes = u,
        8 => d.fast_recovery_steps = u32v,
        9 => d.rai_mbps = x,
        10 => d.rhai_mbps = x,
        11 => d.rmin_mbps = x,
        12 => d.min_cut_interval_us = x,
        _ => d.cnp_interval_us = x,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Up to three fields at extreme values: a keyed error, or a sane configuration.
    #[test]
    fn extreme_switch_values_are_refused_or_sane(
        edits in prop::collection::vec((0usize..21, extreme_u64(), extreme_f64()), 1..4)
    ) {
        let mut file: ConfigFile = toml::from_str(MINIMAL).unwrap();
        for &(field, u, x) in &edits {
            edit_switch(&mut file, field, u, x);
        }
        match file.resolve() {
            Err(e) => {
                prop_assert!(!e.key.is_empty() && !e.message.is_empty(), "{:?}", e);
            }
            Ok(cfg) => check_sane(&cfg),
        }
    }

    /// More cable, a faster port or a larger MTU never gives less headroom, for any
    /// values (the formula saturates instead of wrapping).
    #[test]
    fn headroom_is_monotonic(
        cable in extreme_u64(), more_cable in extreme_u64(),
        bps in extreme_u64(), more_bps in extreme_u64(),
        mtu in any::<u32>(),
    ) {
        let port = |cable: u64, bps: u64| PortConfig {
            name: "p".into(),
            bits_per_sec: bps,
            cable: Nanos(cable),
            mtu,
        };
        let h = min_headroom_bytes(&port(cable, bps));
        prop_assert!(min_headroom_bytes(&port(cable.saturating_add(more_cable), bps)) >= h);
        prop_assert!(min_headroom_bytes(&port(cable, bps.saturating_add(more_bps))) >= h);
    }

    /// A bigger shared buffer never gives a smaller dynamic limit, for any sizes and any
    /// alpha in range.
    #[test]
    fn dynamic_limit_grows_with_the_pool(
        a in extreme_u64(), b in extreme_u64(), alpha in 1.0f64 / 128.0..=8.0,
    ) {
        let (small, big) = (a.min(b).max(1), a.max(b).max(1));
        let limits = |shared: u64| {
            let mut cfg = SwitchConfig::preset("default").unwrap();
            cfg.shared_bytes = shared;
            cfg.queue_limit = QueueLimit::Dynamic(alpha);
            cfg.pgs[3].xoff = XoffRule::Dynamic { alpha, xon_offset_bytes: 0 };
            let mmu = Mmu::new(&cfg);
            (mmu.xoff_threshold(3), mmu.lossy_queue_limit())
        };
        let (x0, q0) = limits(small);
        let (x1, q1) = limits(big);
        prop_assert!(x1 >= x0 && q1 >= q0, "{small}: {x0} {q0}; {big}: {x1} {q1}");
    }

    /// Endpoint and DCQCN values: a keyed error, or timers of 1 ns to 1 hour as Nanos and
    /// rates at most the link; the reaction point then stays between Rmin and the link.
    #[test]
    fn extreme_endpoint_values_are_refused_or_sane(
        edits in prop::collection::vec((0usize..14, extreme_u64(), extreme_f64()), 1..4)
    ) {
        let mut cfg = EndpointConfig::default();
        for &(field, u, x) in &edits {
            edit_endpoint(&mut cfg, field, u, x);
        }
        if let Err(e) = cfg.validate("endpoint") {
            prop_assert!(e.key.starts_with("endpoint.") && !e.message.is_empty(), "{:?}", e);
            return Ok(());
        }
        let hour = Nanos::from_secs(3600);
        let d: DcqcnConfig = cfg.dcqcn;
        for t in [d.alpha_timer(), d.rate_timer(), cfg.rto()] {
            prop_assert!(t >= Nanos(1) && t <= hour, "{t:?}");
        }
        for t in [d.min_cut_interval(), d.cnp_interval()] {
            prop_assert!(t <= hour);
        }
        let line = cfg.bits_per_sec();
        prop_assert!(d.rmin() >= 1 && d.rmin() <= line && d.rai() <= line && d.rhai() <= line);
        let mut rp = ReactionPoint::new(d, line);
        let mut now = Nanos(0);
        for _ in 0..20 {
            rp.on_cnp(now);
            prop_assert!(rp.rate_bps() >= d.rmin().min(line) && rp.rate_bps() <= line);
            now = now.saturating_add(d.rate_timer());
            rp.on_timeout(now);
            rp.on_sent(now, 1 << 20);
            prop_assert!(rp.rate_bps() <= line && rp.target_bps() <= line);
        }
    }
}
