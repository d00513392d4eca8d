"""tests/executor/agent_corpus_ds.py — the corpus of ordinary agent code (agent_corpus.py), its
python.data_science half: pandas, numpy, matplotlib, scikit-learn, seaborn, statsmodels, scipy,
sympy, Pillow, openpyxl, networkx, bs4/lxml, PyYAML, tabulate, joblib."""
import base64

from agent_corpus import DS, SALES_CSV, _png

CORPUS_DS = [
    dict(name="pandas_read_csv_groupby", profile=DS, files={"sales.csv": SALES_CSV}, code="""
import pandas as pd
df = pd.read_csv("sales.csv")
df["revenue"] = df["units"] * df["price"]
print(df.head())
summary = df.groupby("region")["revenue"].agg(["sum", "count"]).sort_values("sum", ascending=False)
print(summary)
print(df.describe().loc["mean", "units"])
""", expect=("East", "7.2")),
    dict(name="numpy_linalg_random", profile=DS, code="""
import numpy as np
rng = np.random.default_rng(42)
A = rng.normal(size=(4, 4))
b = rng.normal(size=4)
x = np.linalg.solve(A, b)
print(np.allclose(A @ x, b), np.linalg.matrix_rank(A), A.shape)
w, v = np.linalg.eig(np.array([[2.0, 0.0], [0.0, 3.0]]))
print(sorted(w.tolist()))
np.random.seed(0); print(round(float(np.random.rand()), 6))
""", expect=("True 4 (4, 4)", "[2.0, 3.0]", "0.548814")),
    dict(name="matplotlib_savefig_and_show", profile=DS, code="""
import matplotlib.pyplot as plt
import numpy as np
x = np.linspace(0, 2 * np.pi, 100)
fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(x, np.sin(x), label="sin")
ax.plot(x, np.cos(x), label="cos")
ax.set_title("Trig – functions"); ax.legend(); ax.grid(True)
plt.savefig("trig.png", dpi=80, bbox_inches="tight")
plt.show()
import os
print("saved", os.path.getsize("trig.png") > 1000)
""", expect="saved True"),
    dict(name="sklearn_logistic_regression", profile=DS, code="""
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
from sklearn.metrics import accuracy_score, classification_report
X, y = load_breast_cancer(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=42)
scaler = StandardScaler().fit(X_train)
clf = LogisticRegression(max_iter=1000).fit(scaler.transform(X_train), y_train)
pred = clf.predict(scaler.transform(X_test))
print(f"accuracy: {accuracy_score(y_test, pred):.3f}")
print(classification_report(y_test, pred).splitlines()[0].split())
""", expect="accuracy: 0.9"),
    dict(name="sklearn_pipeline_cross_val", profile=DS, code="""
from sklearn.datasets import load_iris
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC
from sklearn.model_selection import cross_val_score, GridSearchCV
X, y = load_iris(return_X_y=True)
pipe = make_pipeline(StandardScaler(), SVC())
scores = cross_val_score(pipe, X, y, cv=5)
print("cv mean:", round(scores.mean(), 2))
grid = GridSearchCV(pipe, {"svc__C": [0.1, 1, 10]}, cv=3).fit(X, y)
print(grid.best_params_)
""", expect=("cv mean: 0.9", "svc__C")),
    dict(name="sklearn_kmeans_pca", profile=DS, code="""
from sklearn.cluster import KMeans
from sklearn.decomposition import PCA
from sklearn.metrics import silhouette_score
from sklearn.datasets import make_blobs
X, _ = make_blobs(n_samples=300, centers=4, random_state=0)
km = KMeans(n_clusters=4, n_init=10, random_state=0).fit(X)
print("silhouette:", round(silhouette_score(X, km.labels_), 2))
print(PCA(n_components=2).fit(X).explained_variance_ratio_.round(2).sum())
""", expect="silhouette: 0."),
    dict(name="sklearn_random_forest_wine", profile=DS, code="""
import pandas as pd
from sklearn.datasets import load_wine
from sklearn.ensemble import RandomForestClassifier
wine = load_wine(as_frame=True)
rf = RandomForestClassifier(n_estimators=50, random_state=0).fit(wine.data, wine.target)
imp = pd.Series(rf.feature_importances_, index=wine.data.columns).sort_values(ascending=False)
print(imp.head(3).round(3))
print("train acc", rf.score(wine.data, wine.target))
""", expect="train acc 1.0"),
    dict(name="sklearn_regression_diabetes", profile=DS, code="""
from sklearn.datasets import load_diabetes
from sklearn.linear_model import Ridge
from sklearn.metrics import mean_squared_error, r2_score
X, y = load_diabetes(return_X_y=True)
model = Ridge(alpha=0.5).fit(X[:350], y[:350])
pred = model.predict(X[350:])
print(f"R2={r2_score(y[350:], pred):.2f} RMSE={mean_squared_error(y[350:], pred) ** 0.5:.1f}")
""", expect="R2=0."),
    dict(name="seaborn_histplot_saved", profile=DS, code="""
import seaborn as sns
import matplotlib.pyplot as plt
import numpy as np, pandas as pd
df = pd.DataFrame({"value": np.random.default_rng(1).normal(size=500), "group": ["a", "b"] * 250})
sns.set_theme(style="whitegrid")
ax = sns.histplot(data=df, x="value", hue="group", kde=True)
ax.set_title("Distribution")
plt.savefig("hist.png")
print("bars:", len(ax.patches) > 10)
""", expect="bars: True"),
    dict(name="seaborn_heatmap_corr", profile=DS, code="""
import seaborn as sns, pandas as pd, numpy as np
import matplotlib.pyplot as plt
rng = np.random.default_rng(0)
df = pd.DataFrame(rng.normal(size=(50, 4)), columns=["alpha", "beta", "gamma", "δelta"])
corr = df.corr()
plt.figure(figsize=(5, 4))
sns.heatmap(corr, annot=True, fmt=".2f", cmap="coolwarm")
plt.tight_layout()
print(corr.shape)
""", expect="(4, 4)"),
    dict(name="statsmodels_ols", profile=DS, code="""
import numpy as np
import statsmodels.api as sm
rng = np.random.default_rng(0)
x = rng.uniform(0, 10, 100)
y = 3.0 * x + 2.0 + rng.normal(0, 1, 100)
model = sm.OLS(y, sm.add_constant(x)).fit()
print(model.params.round(1))
print("R-squared" in str(model.summary()), round(model.rsquared, 2) > 0.9)
""", expect=("[2.", "True True")),
    dict(name="statsmodels_formula_api", profile=DS, code="""
import pandas as pd
import statsmodels.formula.api as smf
df = pd.DataFrame({"sales": [10, 12, 15, 18, 22, 25, 30, 33], "ads": [1, 2, 3, 4, 5, 6, 7, 8],
                   "season": ["w", "w", "s", "s", "w", "w", "s", "s"]})
res = smf.ols("sales ~ ads + C(season)", data=df).fit()
print(res.params.index.tolist())
print(res.pvalues["ads"] < 0.05)
""", expect=("Intercept", "True")),
    dict(name="scipy_stats_optimize", profile=DS, code="""
from scipy import stats, optimize, integrate
a = [5.1, 4.9, 5.6, 5.8, 6.0]
b = [6.2, 6.4, 5.9, 6.8, 7.1]
t, p = stats.ttest_ind(a, b)
print(f"t={t:.2f} p={p:.4f}")
res = optimize.minimize(lambda v: (v[0] - 3) ** 2 + (v[1] + 1) ** 2, [0, 0])
print(res.x.round(3), round(integrate.quad(lambda x: x ** 2, 0, 3)[0], 3))
""", expect=("t=-", "[ 3. -1.]", "9.0")),
    dict(name="sympy_algebra", profile=DS, code="""
import sympy as sp
x, y = sp.symbols("x y")
print(sp.solve(x**2 - 5*x + 6, x))
print(sp.simplify(sp.sin(x)**2 + sp.cos(x)**2), sp.diff(sp.exp(x) * x, x))
print(sp.integrate(1 / (1 + x**2), (x, 0, 1)), sp.latex(sp.sqrt(x) / y))
""", expect=("[2, 3]", "pi/4")),
    dict(name="pil_create_draw_resize", profile=DS, code="""
from PIL import Image, ImageDraw, ImageFont, ImageFilter
img = Image.new("RGB", (200, 100), color=(255, 255, 255))
draw = ImageDraw.Draw(img)
draw.rectangle([10, 10, 90, 90], fill="navy", outline="red")
draw.text((100, 40), "Héllo", fill="black", font=ImageFont.truetype("DejaVuSans.ttf", 16))
img = img.filter(ImageFilter.GaussianBlur(1)).resize((100, 50))
img.save("banner.png"); img.save("banner.jpg", quality=85)
again = Image.open("banner.png")
print(again.size, again.mode, again.format)
""", expect="(100, 50) RGB PNG"),
    dict(name="pil_edit_uploaded_image", profile=DS,
         files={"photo.png": {"b64": base64.b64encode(_png(32, 24)).decode()}}, code="""
from PIL import Image, ImageOps, ImageEnhance
im = Image.open("photo.png")
print("input:", im.size, im.mode)
gray = ImageOps.grayscale(im)
thumb = ImageEnhance.Contrast(gray).enhance(1.5).rotate(90, expand=True)
thumb.thumbnail((16, 16))
thumb.save("photo_gray.png")
print("output:", Image.open("photo_gray.png").size, gray.getextrema())
""", expect=("input: (32, 24) RGB", "output: (12, 16)")),
    dict(name="excel_round_trip_pandas", profile=DS, code="""
import pandas as pd
df = pd.DataFrame({"Produit": ["Café", "Thé", "Crème"], "Prix": [2.5, 1.8, 3.2], "Qté": [10, 5, 7]})
with pd.ExcelWriter("rapport.xlsx") as writer:
    df.to_excel(writer, sheet_name="Ventes", index=False)
    df.describe().to_excel(writer, sheet_name="Stats")
back = pd.read_excel("rapport.xlsx", sheet_name=None)
print(list(back), back["Ventes"]["Produit"].tolist(), round(back["Ventes"]["Prix"].sum(), 1))
""", expect="['Ventes', 'Stats'] ['Café', 'Thé', 'Crème'] 7.5"),
    dict(name="openpyxl_styles_formulas", profile=DS, code="""
from openpyxl import Workbook, load_workbook
from openpyxl.styles import Font, PatternFill
wb = Workbook()
ws = wb.active
ws.title = "Budget"
ws.append(["Item", "Cost"])
for row in [("Rent", 1200), ("Food", 450), ("Transport", 120)]:
    ws.append(row)
ws["A5"], ws["B5"] = "Total", "=SUM(B2:B4)"
ws["A1"].font = Font(bold=True)
ws["A1"].fill = PatternFill("solid", fgColor="FFFF00")
wb.save("budget.xlsx")
wb2 = load_workbook("budget.xlsx")
print(wb2.sheetnames, wb2["Budget"]["B5"].value, wb2["Budget"]["A1"].font.bold)
""", expect="['Budget'] =SUM(B2:B4) True"),
    dict(name="networkx_shortest_path", profile=DS, code="""
import networkx as nx
G = nx.Graph()
G.add_weighted_edges_from([("A", "B", 4), ("A", "C", 2), ("C", "B", 1), ("B", "D", 5), ("C", "D", 8)])
print(nx.shortest_path(G, "A", "D", weight="weight"), nx.shortest_path_length(G, "A", "D", weight="weight"))
print(sorted(nx.degree_centrality(G).items())[0], nx.is_connected(G))
""", expect=("['A', 'C', 'B', 'D'] 8", "True")),
    dict(name="bs4_html_table_to_pandas", profile=DS, code="""
from bs4 import BeautifulSoup
import pandas as pd
html = \"\"\"<html><body><h1>Résultats</h1><table id='t'>
<tr><th>Name</th><th>Score</th></tr><tr><td>Ana</td><td>91</td></tr><tr><td>Bo</td><td>78</td></tr>
</table></body></html>\"\"\"
soup = BeautifulSoup(html, "html.parser")
rows = [[td.get_text() for td in tr.find_all(["td", "th"])] for tr in soup.select("#t tr")]
df = pd.DataFrame(rows[1:], columns=rows[0]).astype({"Score": int})
print(soup.h1.text, df["Score"].mean())
print(BeautifulSoup(html, "lxml").find("td").text)
""", expect=("Résultats 84.5", "Ana")),
    dict(name="lxml_xpath", profile=DS, code="""
from lxml import etree
xml = b"<catalog><book id='1'><title>Dune</title><price>9.99</price></book><book id='2'><title>Emma</title><price>5.5</price></book></catalog>"
root = etree.fromstring(xml)
print(root.xpath("//book[price>6]/title/text()"), [b.get("id") for b in root.iter("book")])
""", expect="['Dune'] ['1', '2']"),
    dict(name="yaml_config_file", profile=DS, code="""
import yaml
cfg = {"experiment": "ünicode", "layers": [64, 32], "dropout": 0.2, "flags": {"gpu": False}}
with open("config.yaml", "w", encoding="utf-8") as f:
    yaml.safe_dump(cfg, f, allow_unicode=True, sort_keys=False)
with open("config.yaml", encoding="utf-8") as f:
    print(yaml.safe_load(f))
""", expect="{'experiment': 'ünicode', 'layers': [64, 32]"),
    dict(name="tabulate_and_markdown", profile=DS, code="""
from tabulate import tabulate
import pandas as pd
rows = [["Alice", 93.5], ["Bob", 88.25]]
print(tabulate(rows, headers=["Name", "Score"], tablefmt="github"))
print(pd.DataFrame(rows, columns=["Name", "Score"]).to_markdown(index=False))
""", expect="| Alice  |   93.5  |"),
    dict(name="numpy_npz_round_trip", profile=DS, code="""
import numpy as np
np.savez_compressed("arrays.npz", weights=np.arange(6).reshape(2, 3), bias=np.ones(3))
with np.load("arrays.npz") as data:
    print(sorted(data.files), data["weights"].sum())
np.save("vec.npy", np.linspace(0, 1, 5))
print(np.load("vec.npy"))
""", expect=("['bias', 'weights'] 15", "[0.   0.25 0.5  0.75 1.  ]")),
    dict(name="pandas_timeseries_resample", profile=DS, code="""
import pandas as pd, numpy as np
idx = pd.date_range("2024-01-01", periods=90, freq="D")
s = pd.Series(np.arange(90, dtype=float), index=idx)
monthly = s.resample("M").mean()
print(monthly.round(1).tolist())
print(s.rolling(7).mean().dropna().iloc[0], s.index[-1].strftime("%A %d %B"))
""", expect=("[15.0, 45.0, 74.5]", "3.0 Saturday 30 March")),
    dict(name="joblib_model_persistence", profile=DS, code="""
import joblib
from sklearn.tree import DecisionTreeClassifier
from sklearn.datasets import load_iris
X, y = load_iris(return_X_y=True)
clf = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
joblib.dump(clf, "tree.joblib")
loaded = joblib.load("tree.joblib")
print((loaded.predict(X) == clf.predict(X)).all(), loaded.get_depth())
""", expect="True 3"),
    dict(name="pandas_non_ascii_columns_csv", profile=DS, code="""
import pandas as pd
df = pd.DataFrame({"Städte": ["München", "Köln"], "Einwohner (Mio.)": [1.5, 1.1]})
df.to_csv("städte.csv", index=False, encoding="utf-8")
back = pd.read_csv("städte.csv")
print(back.columns.tolist(), back.iloc[0, 0])
""", expect="['Städte', 'Einwohner (Mio.)'] München"),
    dict(name="matplotlib_subplots_figures_returned", profile=DS, code="""
import matplotlib.pyplot as plt
import numpy as np
fig, axes = plt.subplots(2, 2, figsize=(8, 6))
data = np.random.default_rng(3).normal(size=(4, 100))
for ax, d, title in zip(axes.flat, data, ["α", "β", "γ", "δ"]):
    ax.hist(d, bins=15)
    ax.set_title(title)
fig.suptitle("Four distributions")
fig.tight_layout()
print(len(fig.axes))
""", expect="4"),
    dict(name="pandas_merge_pivot_excel_in", profile=DS,
         files={"orders.csv": "order_id,customer,amount\n1,c1,20\n2,c2,35\n3,c1,15\n",
                "customers.csv": "customer,country\nc1,France\nc2,España\n"}, code="""
import pandas as pd
orders = pd.read_csv("orders.csv")
customers = pd.read_csv("customers.csv")
merged = orders.merge(customers, on="customer")
pivot = merged.pivot_table(index="country", values="amount", aggfunc="sum")
print(pivot)
pivot.to_excel("by_country.xlsx")
print(pd.read_excel("by_country.xlsx").iloc[:, 0].tolist())
""", expect=("España", "['España', 'France']")),
]
