//! The two-dimensional objectives of `argmin_testfunctions` 0.3 that stay in
//! their number type (all but `cross_in_tray`), each with the crate's
//! hand-written derivative and Hessian, given to a checking macro:
//! `objectives_2d!(check)` expands to `check! { beale, tf::beale_derivative,
//! tf::beale_hessian; ... }` (with `tf` the crate).

macro_rules! objectives_2d {
    ($then:ident) => {
        $then! {
            beale, tf::beale_derivative, tf::beale_hessian;
            booth, tf::booth_derivative, tf::booth_hessian;
            bukin_n6, tf::bukin_n6_derivative, tf::bukin_n6_hessian;
            easom, tf::easom_derivative, tf::easom_hessian;
            eggholder, tf::eggholder_derivative, tf::eggholder_hessian;
            goldsteinprice, tf::goldsteinprice_derivative, tf::goldsteinprice_hessian;
            himmelblau, tf::himmelblau_derivative, tf::himmelblau_hessian;
            holder_table, tf::holder_table_derivative, tf::holder_table_hessian;
            levy_n13, tf::levy_n13_derivative, tf::levy_n13_hessian;
            matyas, tf::matyas_derivative, tf::matyas_hessian;
            mccormick, tf::mccormick_derivative, tf::mccormick_hessian;
            picheny, tf::picheny_derivative, tf::picheny_hessian;
            schaffer_n2, tf::schaffer_n2_derivative, tf::schaffer_n2_hessian;
            schaffer_n4, tf::schaffer_n4_derivative, tf::schaffer_n4_hessian;
            threehumpcamel, tf::threehumpcamel_derivative, tf::threehumpcamel_hessian;
        }
    };
}
