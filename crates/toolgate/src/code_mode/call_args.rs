//! A tool function's Python arguments as the one JSON object the gate checks:
//! keywords by name, positional arguments by the order of the stub's parameters
//! (as models write `get_weather("Paris")`), or a single dict of them all.

use monty_types::{CallArgs, ExcType, MontyException, ObjectRef};
use serde_json::{Map, Value};

use super::convert::{NotJson, to_json};

/// The JSON arguments of a call of `function`, whose parameters are `parameters`
/// in the stub's order; a `TypeError` names them when the call does not fit.
pub(super) fn arguments(
    function: &str,
    parameters: &[String],
    args: &CallArgs,
) -> Result<Value, MontyException> {
    let not_json = |e: NotJson| {
        exception(
            e.exception().parse().unwrap_or(ExcType::TypeError),
            &format!("an argument of {function}(): {}", e.message),
        )
    };
    let positional: Vec<ObjectRef<'_>> = args.args().collect();
    if let [dict] = &positional[..]
        && args.kwargs().len() == 0
        && dict.type_name() == "dict"
        && is_arguments_dict(*dict, parameters)
    {
        return to_json(*dict).map_err(not_json);
    }
    if positional.len() > parameters.len() {
        return Err(exception(
            ExcType::TypeError,
            &format!(
                "{function}() takes {} positional argument{} but {} were given; its parameters, in order: {}",
                parameters.len(),
                if parameters.len() == 1 { "" } else { "s" },
                positional.len(),
                listed(parameters),
            ),
        ));
    }
    let mut map = Map::new();
    for (name, value) in parameters.iter().zip(&positional) {
        map.insert(name.clone(), to_json(*value).map_err(not_json)?);
    }
    for (key, value) in args.kwargs() {
        let Some(key) = key.as_str() else {
            return Err(exception(ExcType::TypeError, "keywords must be strings"));
        };
        if map.contains_key(key) {
            return Err(exception(
                ExcType::TypeError,
                &format!("{function}() got multiple values for argument '{key}'"),
            ));
        }
        map.insert(key.to_owned(), to_json(value).map_err(not_json)?);
    }
    Ok(Value::Object(map))
}

/// Whether one positional dict is the whole arguments object (`f({"id": 1})`)
/// rather than the first parameter's value: every key names a parameter, or the
/// function declares none.
fn is_arguments_dict(dict: ObjectRef<'_>, parameters: &[String]) -> bool {
    let pairs = dict.pairs().unwrap_or_default();
    parameters.is_empty()
        || (!pairs.is_empty()
            && pairs.iter().all(|(k, _)| {
                k.as_str()
                    .is_some_and(|k| parameters.iter().any(|p| p == k))
            }))
}

fn listed(parameters: &[String]) -> String {
    if parameters.is_empty() {
        "none".to_owned()
    } else {
        parameters.join(", ")
    }
}

fn exception(kind: ExcType, message: &str) -> MontyException {
    MontyException::new(kind, Some(message.to_owned()))
}

#[cfg(test)]
mod tests {
    use monty_types::MontyObject;
    use serde_json::json;

    use super::*;

    fn params(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    fn call(args: Vec<MontyObject>, kwargs: Vec<(&str, MontyObject)>) -> CallArgs {
        let mut call = CallArgs::new();
        for arg in args {
            call.push_arg(arg);
        }
        for (name, value) in kwargs {
            call.push_kwarg(name, value);
        }
        call
    }

    #[test]
    fn positional_arguments_take_the_parameters_in_the_stubs_order() {
        let args = call(
            vec![MontyObject::string("Paris")],
            vec![("units", MontyObject::string("metric"))],
        );
        let got = arguments("get_weather", &params(&["city", "units"]), &args).unwrap();
        assert_eq!(got, json!({"city": "Paris", "units": "metric"}));
    }

    #[test]
    fn too_many_positional_arguments_name_the_parameters() {
        let args = call(vec![MontyObject::int(1), MontyObject::int(2)], vec![]);
        let error = arguments("get_user", &params(&["id"]), &args).unwrap_err();
        assert_eq!(error.exc_type(), ExcType::TypeError);
        assert_eq!(
            error.message(),
            Some(
                "get_user() takes 1 positional argument but 2 were given; its parameters, in order: id"
            )
        );
    }

    #[test]
    fn an_argument_given_twice_is_a_type_error() {
        let args = call(vec![MontyObject::int(1)], vec![("id", MontyObject::int(2))]);
        let error = arguments("get_user", &params(&["id"]), &args).unwrap_err();
        assert!(
            error
                .message()
                .unwrap()
                .contains("multiple values for argument 'id'")
        );
    }

    #[test]
    fn one_dict_of_parameter_names_is_the_whole_arguments_object() {
        let dict = MontyObject::dict([(MontyObject::string("id"), MontyObject::int(7))]);
        let got = arguments(
            "get_user",
            &params(&["id", "fields"]),
            &call(vec![dict], vec![]),
        )
        .unwrap();
        assert_eq!(got, json!({"id": 7}));
        // A dict whose keys are not parameters is the first parameter's value.
        let filter =
            MontyObject::dict([(MontyObject::string("status"), MontyObject::string("open"))]);
        let got = arguments("search", &params(&["filter"]), &call(vec![filter], vec![])).unwrap();
        assert_eq!(got, json!({"filter": {"status": "open"}}));
    }
}
