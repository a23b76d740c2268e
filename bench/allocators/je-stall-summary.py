#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# je-stall-summary.py CSV: the min, median and max of je-stall.sh's columns, one
# row a configuration (bench/results/je-stall*/2026-12-05/summary.csv).
import csv,sys,statistics as st
rows=list(csv.DictReader(open(sys.argv[1])))
cfgs=[]
for r in rows:
    if r['config'] not in cfgs: cfgs.append(r['config'])
cols=['purge_ms','during_n','during_p999_us','during_max_us','b_cpu_ms','b_runq_ms','b_sleep_ms','b_nvcsw']
print('config,n,'+','.join(f'{c}_min,{c}_median,{c}_max' for c in cols))
for c in cfgs:
    rs=[r for r in rows if r['config']==c]
    out=[c,str(len(rs))]
    for col in cols:
        v=[float(r[col]) for r in rs]
        out+= [f'{min(v):g}',f'{st.median(v):g}',f'{max(v):g}']
    print(','.join(out))
