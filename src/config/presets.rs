//! The built-in configurations, kept as the TOML files users start from.

/// (name, TOML text) of every preset.
pub const PRESETS: [(&str, &str); 3] = [
    ("default", include_str!("presets/default.toml")),
    ("nexus-ai", include_str!("presets/nexus-ai.toml")),
    ("sonic", include_str!("presets/sonic.toml")),
];

/// The TOML text of a preset.
pub fn preset_text(name: &str) -> Option<&'static str> {
    PRESETS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// The endpoint's default configuration as a commented TOML file (`rocelab config show
/// endpoint`); a test keeps it equal to `EndpointConfig::default()`.
pub const ENDPOINT_DEFAULTS: &str = include_str!("presets/endpoint.toml");
