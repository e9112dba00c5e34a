//! Converting a Cluster's `load_balancing_policy` into the policy gRPC runs
//! (C-core's `xds_lb_policy_registry.cc`): the first entry of a supported
//! type wins; unsupported types are skipped.

use envoy_types::pb::envoy::config::cluster::v3::LoadBalancingPolicy;
use envoy_types::pb::envoy::extensions::load_balancing_policies::{
    client_side_weighted_round_robin::v3::ClientSideWeightedRoundRobin,
    least_request::v3::LeastRequest, pick_first::v3::PickFirst, ring_hash::v3::RingHash,
    wrr_locality::v3::WrrLocality,
};
use prost::Message;

use super::LbPolicy;
use super::common::{ExtensionValue, extract_extension, parse_duration};
use super::validation::FieldScope;

const ROUND_ROBIN_TYPE: &str = "envoy.extensions.load_balancing_policies.round_robin.v3.RoundRobin";
const RING_HASH_TYPE: &str = "envoy.extensions.load_balancing_policies.ring_hash.v3.RingHash";
const LEAST_REQUEST_TYPE: &str =
    "envoy.extensions.load_balancing_policies.least_request.v3.LeastRequest";
const WRR_LOCALITY_TYPE: &str =
    "envoy.extensions.load_balancing_policies.wrr_locality.v3.WrrLocality";
const PICK_FIRST_TYPE: &str = "envoy.extensions.load_balancing_policies.pick_first.v3.PickFirst";
const WEIGHTED_ROUND_ROBIN_TYPE: &str = "envoy.extensions.load_balancing_policies.client_side_weighted_round_robin.v3.ClientSideWeightedRoundRobin";

/// C-core stops nesting (wrr_locality inside wrr_locality ...) here.
const MAX_RECURSION_DEPTH: usize = 16;
pub(super) const MAX_RING_SIZE: u64 = 8_388_608;
pub(super) const DEFAULT_MIN_RING_SIZE: u64 = 1024;

/// The gRPC LB policy an xDS policy converts to.
#[derive(Clone, Debug, PartialEq)]
enum Policy {
    RoundRobin,
    RingHash {
        min_ring_size: u64,
        max_ring_size: u64,
    },
    LeastRequest {
        choice_count: u32,
    },
    PickFirst {
        shuffle_address_list: bool,
    },
    WeightedRoundRobin,
    WrrLocality(Box<Policy>),
}

impl Policy {
    /// The gRPC service-config name, with the settings that distinguish it.
    fn name(&self) -> String {
        match self {
            Policy::RoundRobin => "round_robin".to_string(),
            Policy::RingHash {
                min_ring_size,
                max_ring_size,
            } => {
                format!(
                    "ring_hash_experimental{{min_ring_size={min_ring_size},max_ring_size={max_ring_size}}}"
                )
            }
            Policy::LeastRequest { choice_count } => {
                format!("least_request_experimental{{choice_count={choice_count}}}")
            }
            Policy::PickFirst {
                shuffle_address_list: false,
            } => "pick_first".to_string(),
            Policy::PickFirst {
                shuffle_address_list: true,
            } => "pick_first{shuffle_address_list=true}".to_string(),
            Policy::WeightedRoundRobin => "weighted_round_robin".to_string(),
            Policy::WrrLocality(child) => {
                format!("xds_wrr_locality_experimental[{}]", child.name())
            }
        }
    }

    /// The legacy `lb_policy` enum values are shorthands for these exact
    /// configs (ROUND_ROBIN is wrr_locality over round_robin), so an
    /// equivalent `load_balancing_policy` maps to the same value.
    fn into_lb_policy(self) -> LbPolicy {
        match self {
            Policy::RingHash {
                min_ring_size,
                max_ring_size,
            } => LbPolicy::RingHash {
                min_ring_size,
                max_ring_size,
            },
            Policy::WrrLocality(child) => match *child {
                Policy::RoundRobin => LbPolicy::RoundRobin,
                Policy::LeastRequest { choice_count } => LbPolicy::LeastRequest { choice_count },
                other => LbPolicy::Custom {
                    name: Policy::WrrLocality(Box::new(other)).name(),
                },
            },
            other => LbPolicy::Custom { name: other.name() },
        }
    }
}

/// Converts `load_balancing_policy`; errors go under `scope`.
pub(super) fn convert(
    policy: &LoadBalancingPolicy,
    scope: &mut FieldScope<'_>,
) -> Option<LbPolicy> {
    convert_list(policy, scope, 0).map(Policy::into_lb_policy)
}

fn convert_list(
    policy: &LoadBalancingPolicy,
    scope: &mut FieldScope<'_>,
    depth: usize,
) -> Option<Policy> {
    if depth >= MAX_RECURSION_DEPTH {
        scope.error(format!(
            "exceeded max recursion depth of {MAX_RECURSION_DEPTH}"
        ));
        return None;
    }
    let errors_before = scope.error_count();
    for (i, entry) in policy.policies.iter().enumerate() {
        let mut scope = scope.at(&format!(".policies[{i}].typed_extension_config"));
        let Some(extension_config) = &entry.typed_extension_config else {
            scope.error("field not present");
            return None;
        };
        let mut scope = scope.at(".typed_config");
        let extension = extract_extension(extension_config.typed_config.as_ref(), &mut scope)?;
        // A TypedStruct names a custom policy; this client registers none.
        let ExtensionValue::Proto(bytes) = &extension.value else {
            continue;
        };
        let mut scope = scope.at(&extension.field);
        return match extension.type_name.as_str() {
            ROUND_ROBIN_TYPE => Some(Policy::RoundRobin),
            RING_HASH_TYPE => ring_hash(bytes, &mut scope),
            LEAST_REQUEST_TYPE => least_request(bytes, &mut scope),
            WRR_LOCALITY_TYPE => wrr_locality(bytes, &mut scope, depth),
            PICK_FIRST_TYPE => {
                decode::<PickFirst>(bytes, &mut scope, "PickFirst").map(|p| Policy::PickFirst {
                    shuffle_address_list: p.shuffle_address_list,
                })
            }
            WEIGHTED_ROUND_ROBIN_TYPE => weighted_round_robin(bytes, &mut scope),
            _ => continue,
        };
    }
    if scope.error_count() == errors_before {
        scope.error("no supported load balancing policy config found");
    }
    None
}

fn decode<M: Message + Default>(bytes: &[u8], scope: &mut FieldScope<'_>, name: &str) -> Option<M> {
    let decoded = M::decode(bytes).ok();
    if decoded.is_none() {
        scope.error(format!("can't decode {name} LB policy config"));
    }
    decoded
}

fn ring_hash(bytes: &[u8], scope: &mut FieldScope<'_>) -> Option<Policy> {
    let config = decode::<RingHash>(bytes, scope, "RingHash")?;
    // DEFAULT_HASH (0) means XX_HASH (1).
    if !matches!(config.hash_function, 0 | 1) {
        scope
            .at(".hash_function")
            .error("unsupported value (must be XX_HASH)");
    }
    let mut max_ring_size = MAX_RING_SIZE;
    if let Some(max) = config.maximum_ring_size {
        max_ring_size = max.value;
        if max_ring_size == 0 || max_ring_size > MAX_RING_SIZE {
            scope
                .at(".maximum_ring_size")
                .error("value must be in the range [1, 8388608]");
        }
    }
    let mut min_ring_size = DEFAULT_MIN_RING_SIZE;
    if let Some(min) = config.minimum_ring_size {
        min_ring_size = min.value;
        let mut scope = scope.at(".minimum_ring_size");
        if min_ring_size == 0 || min_ring_size > MAX_RING_SIZE {
            scope.error("value must be in the range [1, 8388608]");
        }
        if min_ring_size > max_ring_size {
            scope.error("cannot be greater than maximum_ring_size");
        }
    }
    Some(Policy::RingHash {
        min_ring_size,
        max_ring_size,
    })
}

/// gRFC A48; Envoy requires at least two choices.
fn least_request(bytes: &[u8], scope: &mut FieldScope<'_>) -> Option<Policy> {
    let config = decode::<LeastRequest>(bytes, scope, "LeastRequest")?;
    let choice_count = config.choice_count.map_or(2, |c| c.value);
    if choice_count < 2 {
        scope
            .at(".choice_count")
            .error("must be greater than or equal to 2");
    }
    Some(Policy::LeastRequest { choice_count })
}

fn wrr_locality(bytes: &[u8], scope: &mut FieldScope<'_>, depth: usize) -> Option<Policy> {
    let config = decode::<WrrLocality>(bytes, scope, "WrrLocality")?;
    let mut scope = scope.at(".endpoint_picking_policy");
    let Some(child) = &config.endpoint_picking_policy else {
        scope.error("field not present");
        return None;
    };
    convert_list(child, &mut scope, depth + 1).map(|child| Policy::WrrLocality(Box::new(child)))
}

fn weighted_round_robin(bytes: &[u8], scope: &mut FieldScope<'_>) -> Option<Policy> {
    let config =
        decode::<ClientSideWeightedRoundRobin>(bytes, scope, "ClientSideWeightedRoundRobin")?;
    let durations = [
        (".oob_reporting_period", &config.oob_reporting_period),
        (".blackout_period", &config.blackout_period),
        (".weight_update_period", &config.weight_update_period),
        (
            ".weight_expiration_period",
            &config.weight_expiration_period,
        ),
    ];
    for (field, duration) in durations {
        if let Some(duration) = duration {
            parse_duration(duration, &mut scope.at(field));
        }
    }
    if config
        .error_utilization_penalty
        .is_some_and(|p| p.value < 0.0)
    {
        scope
            .at(".error_utilization_penalty")
            .error("value must be non-negative");
    }
    Some(Policy::WeightedRoundRobin)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::ValidationErrors;
    use crate::resource::test_support::any;
    use envoy_types::pb::envoy::config::cluster::v3::load_balancing_policy::Policy as PolicyEntry;
    use envoy_types::pb::envoy::config::core::v3::TypedExtensionConfig;
    use envoy_types::pb::envoy::extensions::load_balancing_policies::round_robin::v3::RoundRobin;
    use envoy_types::pb::google::protobuf::{self, FloatValue, UInt32Value, UInt64Value};
    use rstest::rstest;

    fn entry(typed_config: Option<protobuf::Any>) -> PolicyEntry {
        PolicyEntry {
            typed_extension_config: Some(TypedExtensionConfig {
                name: "p".into(),
                typed_config,
            }),
        }
    }

    fn policies(entries: Vec<PolicyEntry>) -> LoadBalancingPolicy {
        LoadBalancingPolicy { policies: entries }
    }

    fn run(policy: &LoadBalancingPolicy) -> (Option<LbPolicy>, ValidationErrors) {
        let mut errors = ValidationErrors::new("Cluster");
        let converted = convert(
            policy,
            &mut FieldScope::root(&mut errors).at(".load_balancing_policy"),
        );
        (converted, errors)
    }

    fn wrr(child: protobuf::Any) -> protobuf::Any {
        any(&WrrLocality {
            endpoint_picking_policy: Some(policies(vec![entry(Some(child))])),
        })
    }

    #[rstest]
    #[case(wrr(any(&RoundRobin::default())), LbPolicy::RoundRobin)]
    #[case(any(&RoundRobin::default()), LbPolicy::Custom { name: "round_robin".into() })]
    #[case(
        any(&RingHash::default()),
        LbPolicy::RingHash { min_ring_size: DEFAULT_MIN_RING_SIZE, max_ring_size: MAX_RING_SIZE }
    )]
    #[case(
        any(&RingHash {
            minimum_ring_size: Some(UInt64Value { value: 10 }),
            maximum_ring_size: Some(UInt64Value { value: 20 }),
            ..Default::default()
        }),
        LbPolicy::RingHash { min_ring_size: 10, max_ring_size: 20 }
    )]
    #[case(wrr(any(&LeastRequest::default())), LbPolicy::LeastRequest { choice_count: 2 })]
    #[case(
        any(&LeastRequest { choice_count: Some(UInt32Value { value: 3 }), ..Default::default() }),
        LbPolicy::Custom { name: "least_request_experimental{choice_count=3}".into() }
    )]
    #[case(any(&PickFirst::default()), LbPolicy::Custom { name: "pick_first".into() })]
    #[case(
        any(&PickFirst { shuffle_address_list: true }),
        LbPolicy::Custom { name: "pick_first{shuffle_address_list=true}".into() }
    )]
    #[case(any(&ClientSideWeightedRoundRobin::default()), LbPolicy::Custom { name: "weighted_round_robin".into() })]
    #[case(
        wrr(any(&ClientSideWeightedRoundRobin::default())),
        LbPolicy::Custom { name: "xds_wrr_locality_experimental[weighted_round_robin]".into() }
    )]
    fn supported_policies(#[case] config: protobuf::Any, #[case] expected: LbPolicy) {
        let (converted, errors) = run(&policies(vec![entry(Some(config))]));
        assert!(errors.is_empty(), "{errors}");
        assert_eq!(converted, Some(expected));
    }

    #[test]
    fn first_supported_entry_wins() {
        let unknown = protobuf::Any {
            type_url: "type.googleapis.com/custom.Policy".into(),
            value: vec![],
        };
        let (converted, errors) = run(&policies(vec![
            entry(Some(unknown)),
            entry(Some(any(&PickFirst::default()))),
            entry(Some(wrr(any(&RoundRobin::default())))),
        ]));
        assert!(errors.is_empty(), "{errors}");
        assert_eq!(
            converted,
            Some(LbPolicy::Custom {
                name: "pick_first".into()
            })
        );
    }

    #[test]
    fn nothing_supported() {
        let unknown = protobuf::Any {
            type_url: "type.googleapis.com/custom.Policy".into(),
            value: vec![],
        };
        for list in [policies(vec![]), policies(vec![entry(Some(unknown))])] {
            let (converted, errors) = run(&list);
            assert_eq!(converted, None);
            assert_eq!(
                errors.errors,
                vec![(
                    "load_balancing_policy".into(),
                    "no supported load balancing policy config found".into()
                )]
            );
        }
    }

    #[test]
    fn missing_typed_extension_config() {
        let (converted, errors) = run(&policies(vec![PolicyEntry {
            typed_extension_config: None,
        }]));
        assert_eq!(converted, None);
        assert_eq!(
            errors.errors,
            vec![(
                "load_balancing_policy.policies[0].typed_extension_config".into(),
                "field not present".into()
            )]
        );
    }

    const RING_HASH_FIELD: &str = "load_balancing_policy.policies[0].typed_extension_config.typed_config\
                                   .value[envoy.extensions.load_balancing_policies.ring_hash.v3.RingHash]";

    #[rstest]
    #[case(
        Some(0),
        None,
        0,
        ".maximum_ring_size",
        "value must be in the range [1, 8388608]"
    )]
    #[case(Some(MAX_RING_SIZE + 1), None, 0, ".maximum_ring_size", "value must be in the range [1, 8388608]")]
    #[case(
        None,
        Some(0),
        0,
        ".minimum_ring_size",
        "value must be in the range [1, 8388608]"
    )]
    #[case(
        Some(100),
        Some(200),
        0,
        ".minimum_ring_size",
        "cannot be greater than maximum_ring_size"
    )]
    #[case(None, None, 2, ".hash_function", "unsupported value (must be XX_HASH)")]
    fn invalid_ring_hash(
        #[case] max: Option<u64>,
        #[case] min: Option<u64>,
        #[case] hash_function: i32,
        #[case] field: &str,
        #[case] message: &str,
    ) {
        let config = RingHash {
            maximum_ring_size: max.map(|value| UInt64Value { value }),
            minimum_ring_size: min.map(|value| UInt64Value { value }),
            hash_function,
            ..Default::default()
        };
        let (_, errors) = run(&policies(vec![entry(Some(any(&config)))]));
        assert_eq!(
            errors.errors,
            vec![(format!("{RING_HASH_FIELD}{field}"), message.to_string())]
        );
    }

    #[test]
    fn invalid_least_request_choice_count() {
        let config = LeastRequest {
            choice_count: Some(UInt32Value { value: 1 }),
            ..Default::default()
        };
        let (_, errors) = run(&policies(vec![entry(Some(any(&config)))]));
        assert_eq!(errors.errors.len(), 1);
        assert!(
            errors.errors[0].0.ends_with("LeastRequest].choice_count"),
            "{errors}"
        );
        assert_eq!(errors.errors[0].1, "must be greater than or equal to 2");
    }

    #[test]
    fn invalid_weighted_round_robin() {
        let config = ClientSideWeightedRoundRobin {
            blackout_period: Some(protobuf::Duration {
                seconds: -1,
                nanos: 0,
            }),
            error_utilization_penalty: Some(FloatValue { value: -1.0 }),
            ..Default::default()
        };
        let (_, errors) = run(&policies(vec![entry(Some(any(&config)))]));
        let fields: Vec<&str> = errors
            .errors
            .iter()
            .map(|(f, _)| f.rsplit(']').next().unwrap())
            .collect();
        assert_eq!(
            fields,
            vec![".blackout_period.seconds", ".error_utilization_penalty"]
        );
    }

    #[test]
    fn undecodable_config() {
        let bad = protobuf::Any {
            type_url: format!("type.googleapis.com/{RING_HASH_TYPE}"),
            value: vec![0xff],
        };
        let (converted, errors) = run(&policies(vec![entry(Some(bad))]));
        assert_eq!(converted, None);
        assert_eq!(
            errors.errors,
            vec![(
                RING_HASH_FIELD.to_string(),
                "can't decode RingHash LB policy config".into()
            )]
        );
    }

    #[test]
    fn wrr_locality_without_child() {
        let (converted, errors) = run(&policies(vec![entry(Some(any(&WrrLocality::default())))]));
        assert_eq!(converted, None);
        assert_eq!(errors.errors.len(), 1);
        assert!(
            errors.errors[0]
                .0
                .ends_with("WrrLocality].endpoint_picking_policy"),
            "{errors}"
        );
        assert_eq!(errors.errors[0].1, "field not present");
    }

    #[test]
    fn recursion_is_bounded() {
        let mut config = any(&RoundRobin::default());
        for _ in 0..MAX_RECURSION_DEPTH {
            config = wrr(config);
        }
        let (converted, errors) = run(&policies(vec![entry(Some(config))]));
        assert_eq!(converted, None);
        assert_eq!(errors.errors.len(), 1);
        assert_eq!(errors.errors[0].1, "exceeded max recursion depth of 16");
    }

    #[test]
    fn typed_struct_custom_policies_are_skipped() {
        use crate::resource::test_support::typed_struct;
        let (converted, errors) = run(&policies(vec![
            entry(Some(typed_struct("type.googleapis.com/my_policy"))),
            entry(Some(any(&RingHash::default()))),
        ]));
        assert!(errors.is_empty(), "{errors}");
        assert!(matches!(converted, Some(LbPolicy::RingHash { .. })));
    }
}
