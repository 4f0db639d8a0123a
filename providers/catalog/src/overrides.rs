//! User price overrides: negotiated discounts and private offers, merged over
//! the built-in prices without rebuilding gpuform.
//!
//! The file is CSV with the columns of the built-in price files plus `cloud`:
//!
//! ```text
//! cloud,region,instance_type,pricing,price,currency,source,as_of
//! aws,us-east-1,p4de.24xlarge,reserved-1y,14.20,USD,EDP contract 2026,2026-10-01
//! tencent,*,GN7.2XLARGE32,on-demand,8.10,CNY,,
//! ```
//!
//! `region` may be `*` (every region offering the type); `source` defaults to
//! "price override (FILE:LINE)" and `as_of` to "override".

use super::load::{parse_currency, parse_pricing, rows, Row};
use super::sources::Source;
use super::{Catalog, CatalogError, Price};
use crate::Cloud;

impl Catalog {
    /// A copy of this catalog with the prices of `src` replacing (or adding
    /// to) the built-in ones. Every row must name an offering the catalog
    /// knows, so that a typo never silently prices nothing.
    pub fn with_price_overrides(&self, src: &Source<'_>) -> Result<Catalog, CatalogError> {
        let mut out = self.clone();
        rows(
            src,
            &[
                "cloud",
                "region",
                "instance_type",
                "pricing",
                "price",
                "currency",
            ],
            |row| out.apply_override(src, &row),
        )?;
        Ok(out)
    }

    fn apply_override(&mut self, src: &Source<'_>, row: &Row<'_>) -> Result<(), CatalogError> {
        let cloud: Cloud = row.req("cloud")?.parse().map_err(|e: String| row.err(e))?;
        let region = row.req("region")?;
        let it = row.req("instance_type")?;
        let pricing = parse_pricing(row)?;
        let hourly = row.f64("price")?;
        if !(hourly > 0.0 && hourly.is_finite()) {
            return Err(row.err("price must be a number above zero (per instance-hour)"));
        }
        let price = Price {
            hourly,
            currency: parse_currency(row)?,
            source: match row.get("source") {
                "" => format!("price override ({}:{})", src.file, row.line),
                s => format!("{s} (override, {}:{})", src.file, row.line),
            },
            as_of: match row.get("as_of") {
                "" => "override".to_string(),
                d => d.to_string(),
            },
        };
        if self.instance_type(cloud, it).is_none() {
            return Err(row.err(format!("unknown {cloud} instance type `{it}`")));
        }
        let mut matched = 0;
        for o in self.offerings.iter_mut() {
            if o.cloud == cloud && o.instance_type == it && (region == "*" || o.region == region) {
                o.prices.insert(pricing, price.clone());
                matched += 1;
            }
        }
        if matched == 0 {
            let regions: Vec<&str> = self
                .offerings
                .iter()
                .filter(|o| o.cloud == cloud && o.instance_type == it)
                .map(|o| o.region.as_str())
                .collect();
            return Err(row.err(format!(
                "{cloud} does not offer `{it}` in `{region}` (per the catalog); it is offered in: {}",
                if regions.is_empty() { "no region".to_string() } else { regions.join(", ") }
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PricingModel;

    fn src(text: &str) -> Source<'_> {
        Source {
            file: "prices.csv",
            text,
        }
    }

    #[test]
    fn overrides_replace_prices_and_name_their_source() {
        let base = Catalog::builtin();
        let text = "cloud,region,instance_type,pricing,price,currency,source,as_of\n\
                    aws,us-east-1,p4de.24xlarge,reserved-1y,14.2,USD,EDP contract,2026-10-01\n\
                    aws,*,g4dn.xlarge,spot,0.1,USD,,\n";
        let c = base.with_price_overrides(&src(text)).unwrap();
        let p = &c
            .offering(Cloud::Aws, "us-east-1", "p4de.24xlarge")
            .unwrap()
            .prices[&PricingModel::Reserved1y];
        assert_eq!(p.hourly, 14.2);
        assert!(
            p.source.contains("EDP contract") && p.source.contains("prices.csv:2"),
            "{}",
            p.source
        );
        assert_eq!(p.as_of, "2026-10-01");
        let spot_everywhere = c
            .offerings()
            .iter()
            .filter(|o| o.instance_type == "g4dn.xlarge")
            .all(|o| o.prices[&PricingModel::Spot].hourly == 0.1);
        assert!(spot_everywhere);
        // the built-in catalog is untouched
        assert_ne!(
            base.offering(Cloud::Aws, "us-east-1", "p4de.24xlarge")
                .unwrap()
                .prices
                .get(&PricingModel::Reserved1y)
                .map(|p| p.hourly),
            Some(14.2)
        );
    }

    #[test]
    fn bad_rows_are_refused_with_file_and_line() {
        let base = Catalog::builtin();
        for (row, needle) in [
            (
                "aws,us-east-1,p9.huge,on-demand,1,USD",
                "unknown aws instance type",
            ),
            (
                "aws,eu-north-9,p4de.24xlarge,on-demand,1,USD",
                "does not offer",
            ),
            (
                "aws,us-east-1,p4de.24xlarge,on-demand,-3,USD",
                "non-negative",
            ),
            (
                "azure,us-east-1,p4de.24xlarge,on-demand,1,USD",
                "unknown cloud",
            ),
            ("aws,us-east-1,p4de.24xlarge,hourly,1,USD", "pricing"),
        ] {
            let text = format!("cloud,region,instance_type,pricing,price,currency\n{row}\n");
            let e = base.with_price_overrides(&src(&text)).unwrap_err();
            assert_eq!(e.line, 2, "{e}");
            assert!(e.to_string().contains(needle), "{row}: {e}");
        }
    }
}
