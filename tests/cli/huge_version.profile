# A cost profile of a format version far beyond any integer type.
rk-cost-profile 99999999999999999999
fingerprint 00000000000000000000000000000000
end
