//! Decimal values against their type's precision: Arrow does not check that a decimal array's
//! values have at most the declared number of digits (an unchecked cast or another engine's
//! export makes such arrays), and writers would store a truncated value.

use arrow_array::types::{Decimal128Type, Decimal256Type};
use arrow_array::{Array, PrimitiveArray};
use arrow_buffer::i256;
use arrow_schema::DataType;

/// The position of the first non-null value of a decimal array with more digits than its type's
/// precision; `None` when every value fits (or the array is not a decimal array).
pub fn first_out_of_precision(array: &dyn Array) -> Option<usize> {
    match array.data_type() {
        DataType::Decimal128(precision, _) => {
            let limit = 10i128.checked_pow(u32::from(*precision))?;
            let values = array
                .as_any()
                .downcast_ref::<PrimitiveArray<Decimal128Type>>()?;
            first_outside(values, |v| v >= limit || v <= -limit)
        }
        DataType::Decimal256(precision, _) => {
            let limit = i256::from_i128(10).checked_pow(u32::from(*precision))?;
            let negative = limit.checked_neg()?;
            let values = array
                .as_any()
                .downcast_ref::<PrimitiveArray<Decimal256Type>>()?;
            first_outside(values, |v| v >= limit || v <= negative)
        }
        _ => None,
    }
}

fn first_outside<T: arrow_array::ArrowPrimitiveType>(
    values: &PrimitiveArray<T>,
    outside: impl Fn(T::Native) -> bool,
) -> Option<usize> {
    let raw = values.values();
    match values.nulls() {
        // a scan without branches on validity first: nearly every array is all valid
        None => raw.iter().position(|v| outside(*v)),
        Some(nulls) => raw
            .iter()
            .enumerate()
            .position(|(i, v)| nulls.is_valid(i) && outside(*v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Decimal128Array, Decimal256Array, Int64Array};

    #[test]
    fn finds_the_first_value_beyond_the_precision() {
        let fits = Decimal128Array::from(vec![Some(999_999_999), None, Some(-999_999_999)])
            .with_precision_and_scale(9, 2)
            .unwrap();
        assert_eq!(first_out_of_precision(&fits), None);
        let over = Decimal128Array::from(vec![
            Some(1),
            None,
            Some(-1_000_000_000),
            Some(10i128.pow(9)),
        ])
        .with_precision_and_scale(9, 2)
        .unwrap();
        assert_eq!(first_out_of_precision(&over), Some(2));
        // a null slot holding a large value is not a value
        let hidden = Decimal128Array::from(vec![Some(1), Some(10i128.pow(20))])
            .with_precision_and_scale(9, 0)
            .unwrap();
        let masked = Decimal128Array::new(hidden.values().clone(), Some(vec![true, false].into()))
            .with_precision_and_scale(9, 0)
            .unwrap();
        assert_eq!(first_out_of_precision(&masked), None);
        let max38 = Decimal128Array::from(vec![i128::MAX])
            .with_precision_and_scale(38, 0)
            .unwrap();
        assert_eq!(first_out_of_precision(&max38), Some(0));
        let wide = Decimal256Array::from(vec![i256::from_i128(10).checked_pow(40).unwrap()])
            .with_precision_and_scale(40, 0)
            .unwrap();
        assert_eq!(first_out_of_precision(&wide), Some(0));
        assert_eq!(first_out_of_precision(&Int64Array::from(vec![1])), None);
    }
}
