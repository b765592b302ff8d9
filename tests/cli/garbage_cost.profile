rk-cost-profile 1
garbage = = =
