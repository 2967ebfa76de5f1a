//! Conversions between the protocol's messages and their gRPC forms, kept with the
//! protocol so that both ends (the referee's client, the bots' server) share them.

use crate::grpc::{Check, Combo, OptionDecl as GrpcOption, Spin, Text, option_decl};
use crate::{OptionDecl, OptionType};

impl From<OptionDecl> for GrpcOption {
    fn from(decl: OptionDecl) -> GrpcOption {
        let kind = match decl.kind {
            OptionType::Spin { default, min, max } => option_decl::Kind::Spin(Spin { default, min, max }),
            OptionType::Check { default } => option_decl::Kind::Check(Check { default }),
            OptionType::Combo { default, values } => option_decl::Kind::Combo(Combo { default, values }),
            OptionType::Text { default } => option_decl::Kind::Text(Text { default }),
        };
        GrpcOption {
            name: decl.name,
            kind: Some(kind),
        }
    }
}

impl OptionDecl {
    /// The declaration a gRPC option message carries; `None` if it names no kind.
    pub fn from_grpc(decl: GrpcOption) -> Option<OptionDecl> {
        let kind = match decl.kind? {
            option_decl::Kind::Spin(s) => OptionType::Spin {
                default: s.default,
                min: s.min,
                max: s.max,
            },
            option_decl::Kind::Check(c) => OptionType::Check { default: c.default },
            option_decl::Kind::Combo(c) => OptionType::Combo {
                default: c.default,
                values: c.values,
            },
            option_decl::Kind::Text(t) => OptionType::Text { default: t.default },
        };
        Some(OptionDecl {
            name: decl.name,
            kind,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_option_kind_survives_the_grpc_form() {
        let decls = [
            OptionType::Spin {
                default: 3,
                min: -1,
                max: 9,
            },
            OptionType::Check { default: true },
            OptionType::Combo {
                default: "b".into(),
                values: vec!["a".into(), "b".into()],
            },
            OptionType::Text {
                default: "x y".into(),
            },
        ];
        for kind in decls {
            let decl = OptionDecl {
                name: "opt".into(),
                kind,
            };
            assert_eq!(OptionDecl::from_grpc(GrpcOption::from(decl.clone())), Some(decl));
        }
        assert_eq!(
            OptionDecl::from_grpc(GrpcOption {
                name: "none".into(),
                kind: None
            }),
            None
        );
    }
}
