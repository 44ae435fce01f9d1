//! The buffer: the pool, the lossless PGs' profiles (one per PG for the whole switch, the
//! largest headroom), the lossy queues and PGs, and the dynamic buffer model.

use super::config_db::{
    Doc, PgBinding, Port, Profile, bound_profile, pg_bindings, profile, val_err,
};
use crate::config::import::{ImportError, Writer, num};
use serde_json::Value;

/// SONiC's `dynamic_th` n is alpha = 2^n; rocelab takes n = −7 to 3.
pub(super) fn alpha(w: &mut Writer, n: i32, source: &str) -> f64 {
    let clamped = n.clamp(-7, 3);
    if clamped != n {
        w.warn(
            source,
            format!(
                "dynamic_th {n} (alpha 2^{n}) is outside rocelab's -7 to 3: imported as {clamped}"
            ),
        );
    }
    2f64.powi(clamped)
}

/// The lossless PGs' profiles (a PG, its profile, the BUFFER_PG field that binds it),
/// and the PGs no profile is bound to, whose headroom the switch computes.
type LosslessPgs = (Vec<(usize, Profile, String)>, Vec<usize>);

/// `[buffer]` and the `[pg.N]` sections.
pub(super) fn buffers(
    doc: &Doc<'_>,
    ports: &[Port],
    lossless: &[usize],
    w: &mut Writer,
) -> Result<(), ImportError> {
    let dynamic_model =
        doc.field("DEVICE_METADATA", "localhost", "buffer_model") == Some("dynamic");
    let (pg_profiles, computed) = lossless_pgs(doc, ports, lossless, dynamic_model, w)?;
    w.section("buffer", false);
    let (pool_name, static_mode) = pool(doc, &pg_profiles, dynamic_model, w)?;
    if let Some((_, pr, _)) = pg_profiles.first()
        && let Some(n) = pr.dynamic_th
    {
        let source = format!("BUFFER_PROFILE|{}|dynamic_th", pr.name);
        let a = alpha(w, n, &source);
        w.value("pg_alpha", num(a), &format!("{source} = {n} (alpha 2^{n})"));
    }
    if dynamic_model && !computed.is_empty() {
        dynamic_headroom(doc, w, pg_profiles.is_empty())?;
    }
    lossy(doc, ports, lossless, pool_name.as_deref(), static_mode, w)?;
    pg_sections(doc, &pg_profiles, &computed, dynamic_model, static_mode, w)
}

/// Lossless PG profiles, per priority: the one with the largest headroom covers every
/// port. In the dynamic buffer model a lossless PG is bound to "NULL" (or not at all)
/// and the switch computes its profile from the port: those are returned apart.
fn lossless_pgs(
    doc: &Doc<'_>,
    ports: &[Port],
    lossless: &[usize],
    dynamic_model: bool,
    w: &mut Writer,
) -> Result<LosslessPgs, ImportError> {
    let mut computed: Vec<usize> = Vec::new();
    let mut pg_profiles: Vec<(usize, Profile, String)> = Vec::new();
    for &p in lossless {
        let bound = pg_bindings(doc, ports, p)?;
        short_headroom(ports, &bound, p, w);
        match one_profile(&bound, p, dynamic_model, w) {
            Some((best, via)) => pg_profiles.push((p, best, via)),
            None => computed.push(p),
        }
    }
    Ok((pg_profiles, computed))
}

/// Warns about the ports whose lossless PG `p` has less headroom than they need.
fn short_headroom(ports: &[Port], bound: &[PgBinding], p: usize, w: &mut Writer) {
    // Ports short of headroom, per profile: one warning each, naming them. The
    // profile with the largest headroom is the one rocelab gives every port (below),
    // bound or not, so its warning checks them all: it stands for the configuration
    // check's on the same key, which is then not given. Another profile is checked
    // against the ports it is bound to on the switch.
    let applied = bound
        .iter()
        .max_by_key(|b| b.profile.xoff.unwrap_or(0))
        .map(|b| &b.profile);
    let mut short: Vec<(&str, u64, Vec<String>)> = Vec::new();
    let unbound = ports
        .iter()
        .filter(|q| !bound.iter().any(|b| b.port == q.name));
    let applied_to_unbound = applied
        .map(|pr| unbound.map(move |q| (q.name.as_str(), pr)))
        .into_iter()
        .flatten();
    let checked = bound
        .iter()
        .map(|b| (b.port.as_str(), &b.profile))
        .chain(applied_to_unbound);
    for (port, pr) in checked {
        let Some(xoff) = pr.xoff else { continue };
        let Some(p) = ports.iter().find(|p| p.name == port) else {
            continue;
        };
        let cfg = crate::config::PortConfig {
            name: p.name.clone(),
            bits_per_sec: (p.speed_mbps * 1e6) as u64,
            cable: crate::time::Nanos((p.cable_m() * crate::config::CABLE_NS_PER_M as f64) as u64),
            mtu: p.mtu as u32,
        };
        let need = crate::config::min_headroom_bytes(&cfg);
        if xoff < need {
            let what = format!(
                "{port} {need} B ({} Gb/s, {} m, MTU {})",
                num(p.speed_mbps / 1000.0),
                num(p.cable_m()),
                p.mtu
            );
            match short.iter_mut().find(|(name, _, _)| *name == pr.name) {
                Some((_, _, list)) => list.push(what),
                None => short.push((&pr.name, xoff, vec![what])),
            }
        }
    }
    for (name, xoff, list) in short {
        let source = format!("BUFFER_PROFILE|{name}|xoff");
        let message = format!(
            "headroom {xoff} B is below what its ports need ({}; 2 x MTU + 2 x cable delay x rate + the PFC frame + the peer's response): frames in flight after XOFF are dropped",
            list.join(", ")
        );
        if applied.is_some_and(|a| a.name == name) {
            w.warn_instead_of(format!("pg.{p}.headroom_bytes"), source, message);
        } else {
            w.warn(source, message);
        }
    }
}

/// The one profile rocelab takes for PG `p` (the largest headroom) with its binding, and
/// warnings about the ports that bind others and about its XON above XOFF; `None` when no
/// port binds one.
fn one_profile(
    bound: &[PgBinding],
    p: usize,
    dynamic_model: bool,
    w: &mut Writer,
) -> Option<(Profile, String)> {
    let Some(PgBinding {
        profile: best, via, ..
    }) = bound
        .iter()
        .max_by_key(|b| b.profile.xoff.unwrap_or(0))
        .cloned()
    else {
        if !dynamic_model {
            w.warn(
                format!("BUFFER_PG|<port>|{p}"),
                format!(
                    "no profile bound to lossless PG {p}: rocelab computes its headroom per port (IEEE formula)"
                ),
            );
        }
        return None;
    };
    let others: Vec<String> = bound
        .iter()
        .filter(|b| b.profile.name != best.name)
        .map(|b| format!("{} ({})", b.port, b.profile.name))
        .collect();
    if !others.is_empty() {
        w.warn(
            via.clone(),
            format!(
                "ports bind different profiles to PG {p}; rocelab has one per PG and takes '{}', the largest headroom, for every port (others: {})",
                best.name,
                others.join(", ")
            ),
        );
    }
    if let (Some(xon), Some(xoff)) = (best.xon, best.xoff)
        && xon > xoff
    {
        w.warn(
            format!("BUFFER_PROFILE|{}|xon", best.name),
            format!(
                "XON threshold {xon} B is above XOFF {xoff} B: the PG would resume before it paused"
            ),
        );
    }
    Some((best, via))
}

/// `shared_bytes` and `threshold` from the pool of the lossless profiles (else the
/// ingress pool): its name, and whether it is static.
fn pool(
    doc: &Doc<'_>,
    pg_profiles: &[(usize, Profile, String)],
    dynamic_model: bool,
    w: &mut Writer,
) -> Result<(Option<String>, bool), ImportError> {
    // The pool: the lossless profiles' (else the ingress pool).
    let pool_name = pg_profiles
        .iter()
        .find_map(|(_, pr, _)| pr.pool.clone())
        .or_else(|| {
            doc.table("BUFFER_POOL")?
                .iter()
                .find(|(_, v)| v.get("type").and_then(Value::as_str) == Some("ingress"))
                .map(|(k, _)| k.clone())
        });
    let mut static_mode = false;
    if let Some(pool) = &pool_name {
        // The dynamic buffer model sizes the pools itself and leaves the size out of
        // CONFIG_DB; the static one needs it.
        let size = match doc.whole("BUFFER_POOL", pool, "size")? {
            Some(size) => Some(size),
            None if dynamic_model => {
                w.warn(
                    format!("BUFFER_POOL|{pool}|size"),
                    format!(
                        "no size: the dynamic buffer model computes it on the switch; rocelab's default shared pool, {} B, stands in",
                        crate::config::default_shared()
                    ),
                );
                None
            }
            None => return Err(val_err(format!("BUFFER_POOL|{pool}|size"), "missing")),
        };
        let xoff = doc.whole("BUFFER_POOL", pool, "xoff")?.unwrap_or(0);
        if let Some(size) = size
            && xoff > 0
        {
            w.value(
                "shared_bytes",
                size.saturating_sub(xoff),
                &format!("BUFFER_POOL|{pool}|size {size} - xoff {xoff} (the shared headroom pool)"),
            );
            w.warn(
                format!("BUFFER_POOL|{pool}|xoff"),
                format!(
                    "a shared headroom pool of {xoff} B: rocelab gives each lossless PG its own headroom (the profile's xoff) instead"
                ),
            );
        } else if let Some(size) = size {
            w.value("shared_bytes", size, &format!("BUFFER_POOL|{pool}|size"));
        }
        static_mode = doc.field("BUFFER_POOL", pool, "mode") == Some("static");
        w.value(
            "threshold",
            if static_mode {
                "\"static\""
            } else {
                "\"dynamic\""
            },
            &format!("BUFFER_POOL|{pool}|mode"),
        );
    }
    Ok((pool_name, static_mode))
}

/// The lossy queues' limit and reserve and the lossy PGs' reserve, from the profiles
/// bound to the first lossy queue and PG found.
fn lossy(
    doc: &Doc<'_>,
    ports: &[Port],
    lossless: &[usize],
    pool_name: Option<&str>,
    static_mode: bool,
    w: &mut Writer,
) -> Result<(), ImportError> {
    // Lossy queues and PGs.
    let lossy_queue = ports.iter().find_map(|port| {
        (0..8)
            .filter(|q| !lossless.contains(q))
            .find_map(|q| bound_profile(doc, "BUFFER_QUEUE", &port.name, q))
    });
    if let Some((name, via)) = lossy_queue {
        let pr = profile(doc, &name, &via)?;
        let source = format!("BUFFER_PROFILE|{name}");
        match (pr.dynamic_th, pr.static_th) {
            (Some(n), _) if !static_mode => {
                let a = alpha(w, n, &format!("{source}|dynamic_th"));
                w.value(
                    "queue_alpha",
                    num(a),
                    &format!("{source}|dynamic_th = {n} (via {via})"),
                );
            }
            (_, Some(bytes)) => {
                w.value(
                    "queue_limit_bytes",
                    bytes,
                    &format!("{source}|static_th (via {via})"),
                );
            }
            (Some(n), None) => {
                let a = 2f64.powi(n.clamp(-7, 3));
                let total = doc
                    .whole("BUFFER_POOL", pool_name.unwrap_or(""), "size")?
                    .unwrap_or(0);
                let bytes = (a * total as f64 / (1.0 + a)) as u64;
                w.value(
                    "queue_limit_bytes",
                    bytes,
                    &format!("{source}|dynamic_th = {n} in a static pool: alpha/(1+alpha) x pool"),
                );
                w.warn(
                format!("{source}|dynamic_th"),
                "a dynamic lossy-queue threshold in a static pool: rocelab has one mode, imported as its static equivalent",
            );
            }
            (None, None) => {}
        }
        w.value("queue_reserve_bytes", pr.size, &format!("{source}|size"));
    }
    let lossy_pg = ports.iter().find_map(|port| {
        (0..8)
            .filter(|p| !lossless.contains(p))
            .find_map(|p| bound_profile(doc, "BUFFER_PG", &port.name, p))
    });
    if let Some((name, via)) = lossy_pg {
        let pr = profile(doc, &name, &via)?;
        w.value(
            "pg_reserve_bytes",
            pr.size,
            &format!("BUFFER_PROFILE|{name}|size (lossy PGs, via {via})"),
        );
    }
    Ok(())
}

/// A `[pg.N]` per lossless PG: those the dynamic model computes, then those with a
/// profile.
fn pg_sections(
    doc: &Doc<'_>,
    pg_profiles: &[(usize, Profile, String)],
    computed: &[usize],
    dynamic_model: bool,
    static_mode: bool,
    w: &mut Writer,
) -> Result<(), ImportError> {
    if dynamic_model {
        for p in computed {
            w.section(&format!("pg.{p}"), false);
            w.value(
                "reserve_bytes",
                crate::config::headroom::sonic_mellanox::PIPELINE_BYTES,
                "the dynamic model's xon: the pipeline latency, 19 KiB (asic_table.j2)",
            );
        }
    }
    for (p, pr, via) in pg_profiles {
        w.section(&format!("pg.{p}"), false);
        let source = format!("BUFFER_PROFILE|{}", pr.name);
        let pool_xoff = doc
            .whole("BUFFER_POOL", pr.pool.as_deref().unwrap_or(""), "xoff")?
            .unwrap_or(0);
        let xoff = pr.xoff.unwrap_or(0);
        let (reserve, how) = if pool_xoff > 0 {
            (pr.size, "size (headroom comes from the pool's xoff)")
        } else if pr.size >= xoff {
            (pr.size - xoff, "size - xoff (size holds the headroom)")
        } else {
            (pr.size, "size")
        };
        w.value(
            "reserve_bytes",
            reserve,
            &format!("{source}|{how}, via {via}"),
        );
        if pr.xoff.is_some() {
            w.value("headroom_bytes", xoff, &format!("{source}|xoff"));
        }
        if static_mode {
            let limit = pr.static_th.ok_or_else(|| {
                val_err(
                    format!("{source}|static_th"),
                    "a static pool's lossless profile needs static_th",
                )
            })?;
            let xon = match (pr.xon_offset, pr.xon) {
                (Some(off), _) => limit.saturating_sub(off),
                (None, Some(xon)) => xon,
                (None, None) => limit.saturating_sub(1),
            };
            w.value("xoff_bytes", limit, &format!("{source}|static_th"));
            w.value("xon_bytes", xon, &format!("{source}|xon_offset or xon"));
        } else if let Some(off) = pr.xon_offset {
            w.value("xon_offset_bytes", off, &format!("{source}|xon_offset"));
        }
    }
    Ok(())
}

/// The dynamic buffer model: headroom computed per port as SONiC's Mellanox plugin does,
/// and the lossless PGs' alpha from `DEFAULT_LOSSLESS_BUFFER_PARAMETER`.
pub(super) fn dynamic_headroom(
    doc: &Doc<'_>,
    w: &mut Writer,
    set_alpha: bool,
) -> Result<(), ImportError> {
    use crate::config::headroom::sonic_mellanox::{LOSSLESS_MTU, SMALL_PACKET_PERCENT};
    w.value(
        "headroom_model",
        "\"sonic_mellanox\"",
        "DEVICE_METADATA|localhost|buffer_model = dynamic: xoff per port by buffer_headroom_mellanox.lua (Spectrum-1 constants)",
    );
    if let Some(t) = doc.table("LOSSLESS_TRAFFIC_PATTERN")
        && let Some(name) = t.keys().next()
    {
        let mtu = doc.number("LOSSLESS_TRAFFIC_PATTERN", name, "mtu")?;
        let spp = doc.number("LOSSLESS_TRAFFIC_PATTERN", name, "small_packet_percentage")?;
        if mtu.is_some_and(|m| m != LOSSLESS_MTU) || spp.is_some_and(|p| p != SMALL_PACKET_PERCENT)
        {
            w.warn(
                format!("LOSSLESS_TRAFFIC_PATTERN|{name}"),
                format!(
                    "rocelab's sonic_mellanox headroom assumes SONiC's default pattern (mtu {LOSSLESS_MTU}, small_packet_percentage {SMALL_PACKET_PERCENT}), not this one"
                ),
            );
        }
    }
    let th = doc
        .table("DEFAULT_LOSSLESS_BUFFER_PARAMETER")
        .and_then(|t| t.keys().next())
        .map(|name| {
            (
                name.clone(),
                doc.exponent(
                    "DEFAULT_LOSSLESS_BUFFER_PARAMETER",
                    name,
                    "default_dynamic_th",
                ),
            )
        });
    if let Some((name, n)) = th
        && let Some(n) = n?
        && set_alpha
    {
        let source = format!("DEFAULT_LOSSLESS_BUFFER_PARAMETER|{name}|default_dynamic_th");
        let a = alpha(w, n, &source);
        w.value("pg_alpha", num(a), &format!("{source} = {n} (alpha 2^{n})"));
    }
    Ok(())
}
