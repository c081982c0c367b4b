import json,collections,sys
def load(p):
    t=collections.defaultdict(dict)
    for line in open(p):
        r=json.loads(line); fam=r['key'][0].split('act=')[1].split()[0]; m=r['key'][2]
        t[(r['result']['config'],m)][fam]=r['result']['us']
    return t
a=load(sys.argv[1]); b=load(sys.argv[2])
print(f"{'config':34s} m     | before: erf  tanh  none | after: erf  tanh  none | erf/none before after")
for m in (16384,50432):
  for c in sorted({c for c,_ in b}):
    x=a.get((c,m),{}); y=b.get((c,m),{})
    if not y: continue
    f=lambda d,k: f"{d[k]:7.1f}" if k in d else "   -   "
    print(f"{c:34s} {m} | {f(x,'gelu')}{f(x,'gelu_tanh')}{f(x,'none')} | {f(y,'gelu')}{f(y,'gelu_tanh')}{f(y,'none')} | {x['gelu']/x['none']:.2f} {y['gelu']/y['none']:.2f}")
