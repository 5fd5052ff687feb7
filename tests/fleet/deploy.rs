//! deploy/: the Agones manifests parse as YAML of the right kinds, and
//! agree with the server's defaults and the container (docs/FLEET.md): the
//! port the Dockerfile exposes, a grace period longer than the drain, a
//! health check the tick's reports keep passing, the players list the
//! server reports on.

use std::time::Duration;

use yaml_rust2::{Yaml, YamlLoader};
use zao::fleet::FleetSettings;

fn manifests() -> Vec<Yaml> {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/fleet.yaml")).unwrap();
    YamlLoader::load_from_str(&text).expect("deploy/fleet.yaml is YAML")
}

fn of_kind<'a>(docs: &'a [Yaml], kind: &str) -> &'a Yaml {
    let found: Vec<&Yaml> = docs
        .iter()
        .filter(|d| d["kind"].as_str() == Some(kind))
        .collect();
    assert_eq!(found.len(), 1, "one {kind} in deploy/fleet.yaml");
    found[0]
}

fn secs(y: &Yaml) -> Duration {
    Duration::from_secs(u64::try_from(y.as_i64().expect("a number of seconds")).unwrap())
}

#[test]
fn the_manifests_are_a_fleet_and_its_autoscaler() {
    let docs = manifests();
    assert_eq!(docs.len(), 2);
    let fleet = of_kind(&docs, "Fleet");
    assert_eq!(fleet["apiVersion"].as_str(), Some("agones.dev/v1"));
    let autoscaler = of_kind(&docs, "FleetAutoscaler");
    assert_eq!(
        autoscaler["apiVersion"].as_str(),
        Some("autoscaling.agones.dev/v1")
    );
    assert_eq!(
        autoscaler["spec"]["fleetName"].as_str(),
        fleet["metadata"]["name"].as_str(),
        "the autoscaler scales this fleet"
    );
    let policy = &autoscaler["spec"]["policy"];
    assert_eq!(policy["type"].as_str(), Some("Buffer"));
    let buffer = &policy["buffer"];
    assert!(buffer["bufferSize"].as_i64().unwrap() >= 1);
    assert!(buffer["minReplicas"].as_i64().unwrap() >= buffer["bufferSize"].as_i64().unwrap());
    assert!(buffer["maxReplicas"].as_i64().unwrap() >= buffer["minReplicas"].as_i64().unwrap());
}

#[test]
fn the_fleet_agrees_with_the_server_and_its_container() {
    let docs = manifests();
    let spec = &of_kind(&docs, "Fleet")["spec"]["template"]["spec"];
    let defaults = FleetSettings::default();

    // The one UDP port, as the container exposes and the server binds.
    let ports = spec["ports"].as_vec().unwrap();
    assert_eq!(ports.len(), 1);
    assert_eq!(ports[0]["protocol"].as_str(), Some("UDP"));
    let port = ports[0]["containerPort"].as_i64().unwrap();
    let dockerfile =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/Dockerfile")).unwrap();
    assert!(dockerfile.contains(&format!("EXPOSE {port}/udp")));
    assert!(dockerfile.contains(&format!("0.0.0.0:{port}")));
    assert!(dockerfile.contains("--example fleet_server") && dockerfile.contains("--agones"));

    // Health: reported every interval, checked every period, failed after
    // the threshold: a live loop never misses, a hung one is replaced.
    let health = &spec["health"];
    assert_eq!(health["disabled"].as_bool(), Some(false));
    let period = secs(&health["periodSeconds"]);
    assert!(
        defaults.health_interval * 2 <= period,
        "two reports a period at least"
    );
    assert!(health["failureThreshold"].as_i64().unwrap() >= 1);

    // The drain fits the grace period before SIGKILL, with room to close.
    let grace = secs(&spec["template"]["spec"]["terminationGracePeriodSeconds"]);
    assert!(
        defaults.drain_timeout + Duration::from_secs(5) <= grace,
        "drain {:?} within the grace period {grace:?}",
        defaults.drain_timeout
    );

    // The list the server reports players on.
    assert!(spec["lists"]["players"]["capacity"].as_i64().unwrap() > 0);
    let containers = spec["template"]["spec"]["containers"].as_vec().unwrap();
    assert_eq!(containers.len(), 1);
}
