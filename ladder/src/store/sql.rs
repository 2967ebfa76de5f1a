//! SQL text built together with its arguments, the placeholders numbered as they
//! are bound. sqlx's `QueryBuilder` writes `?` under the `Any` driver, which
//! PostgreSQL does not take; this writes `$n`, which both back ends take.

use sqlx::any::AnyArguments;
use sqlx::{Any, Arguments};

/// A statement being built: text, and the values its placeholders stand for.
#[derive(Default)]
pub(super) struct Sql {
    text: String,
    args: AnyArguments,
    bound: usize,
    /// The first value that could not be encoded: reported when the query runs.
    failed: Option<sqlx::error::BoxDynError>,
}

impl Sql {
    /// A statement that begins with `text`.
    pub(super) fn new(text: &str) -> Sql {
        let mut sql = Sql::default();
        sql.push(text);
        sql
    }

    /// Appends SQL text (never a value: values go through [`Sql::bind`]).
    pub(super) fn push(&mut self, text: &str) -> &mut Sql {
        self.text.push_str(text);
        self
    }

    /// Appends a placeholder for `value`.
    pub(super) fn bind<'t, T>(&mut self, value: T) -> &mut Sql
    where
        T: sqlx::Encode<'t, Any> + sqlx::Type<Any>,
    {
        self.bound += 1;
        self.text.push('$');
        self.text.push_str(&self.bound.to_string());
        if let Err(e) = self.args.add(value)
            && self.failed.is_none()
        {
            self.failed = Some(e);
        }
        self
    }

    /// Appends `(v1, v2, ...)`: a list for `IN`.
    pub(super) fn list<'t, T>(&mut self, values: impl IntoIterator<Item = T>) -> &mut Sql
    where
        T: sqlx::Encode<'t, Any> + sqlx::Type<Any>,
    {
        self.push("(");
        for (k, value) in values.into_iter().enumerate() {
            if k > 0 {
                self.push(", ");
            }
            self.bind(value);
        }
        self.push(")")
    }

    /// Appends `(...), (...)`: one row of a many-row `INSERT` per item, its values
    /// bound by `row` through [`Row::bind`].
    pub(super) fn rows<I: IntoIterator>(
        &mut self,
        items: I,
        mut row: impl FnMut(&mut Row<'_>, I::Item),
    ) -> &mut Sql {
        for (k, item) in items.into_iter().enumerate() {
            self.push(if k == 0 { "(" } else { "), (" });
            row(
                &mut Row {
                    sql: self,
                    first: true,
                },
                item,
            );
        }
        self.push(")")
    }

    /// The query to run.
    ///
    /// # Errors
    /// A value that could not be encoded.
    pub(super) fn query(self) -> Result<sqlx::query::Query<'static, Any, AnyArguments>, sqlx::Error> {
        match self.failed {
            Some(e) => Err(sqlx::Error::Encode(e)),
            None => Ok(sqlx::query_with(sqlx::AssertSqlSafe(self.text), self.args)),
        }
    }
}

/// One row of [`Sql::rows`].
pub(super) struct Row<'a> {
    sql: &'a mut Sql,
    first: bool,
}

impl Row<'_> {
    /// The row's next value.
    pub(super) fn bind<'t, T>(&mut self, value: T) -> &mut Self
    where
        T: sqlx::Encode<'t, Any> + sqlx::Type<Any>,
    {
        if !self.first {
            self.sql.push(", ");
        }
        self.first = false;
        self.sql.bind(value);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_in_the_order_values_are_bound() {
        let mut sql = Sql::new("INSERT INTO t (a, b) VALUES ");
        sql.rows([(1i64, "x"), (2, "y")], |row, (a, b)| {
            row.bind(a).bind(b.to_owned());
        });
        sql.push(" WHERE id IN ").list([7i64, 8, 9]);
        assert_eq!(
            sql.text,
            "INSERT INTO t (a, b) VALUES ($1, $2), ($3, $4) WHERE id IN ($5, $6, $7)"
        );
        assert_eq!(sql.args.len(), 7);
    }
}
